"""A script that ended inside the profiled window (analysis/short_window.py): the part covered, and a --schedule
whose window, and the step after it that writes its trace, lie inside the steps the script ran."""

import pytest

from commprof.analysis.short_window import short_window
from commprof.config import ProfileSchedule, RunConfig
from commprof.results.report import ShortWindow
from commprof.results.run_record import RunSummary

DEFAULT = ProfileSchedule(wait=5, warmup=2, active=10)


def _run(ran: int, script=("train.py",)) -> RunSummary:
    config = RunConfig(run_id="r", schedule=DEFAULT, script=script)
    return RunSummary(run_id="r", config=config, steps_completed=ran)


@pytest.mark.parametrize("ran", [8, 10, 12, 16])
def test_a_script_ending_inside_the_window_is_given_a_schedule_that_fits(ran):
    found = short_window(_run(ran))
    assert found is not None and (found.first_step, found.last_step, found.asked) == (8, ran, 10)
    wait, warmup, active = found.fits
    assert active >= 1 and wait + warmup + active + 1 <= ran  # the window and the step that writes its trace


def test_a_script_that_covered_the_window_or_is_no_script_has_none():
    assert short_window(_run(17)) is None and short_window(_run(40)) is None
    assert short_window(_run(10, script=())) is None  # a built-in run runs its --steps
    assert short_window(None) is None
    assert short_window(_run(10)) == ShortWindow(8, 10, 10, (2, 2, 5))  # its warm-up kept
