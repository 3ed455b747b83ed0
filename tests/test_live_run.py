"""A run seen while it goes on (issue 52, item 6), on a real 2-rank run whose step grows fourfold from step 100 of 250:
its progress lines say the change before the run ends, every step of every rank is drawn as it comes, and the report
finds the change where the live view did."""

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from commprof.render.whole_run_view import GREW_SHORT
from commprof.results.store import load_report
from tests.conftest import REPO, commprof_here

pytestmark = pytest.mark.slow
SCRIPT = REPO / "tests" / "data" / "scripts" / "slows_down.py"


def test_a_running_job_draws_its_steps_and_says_its_change_as_it_happens(tmp_path):
    result = commprof_here("run", "--run-id", "live", "--", str(SCRIPT), "100", "250", "20", "80", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    said = [i for i, line in enumerate(lines) if "the step changed at step " in line]
    done = next(i for i, line in enumerate(lines) if "rank 0 done: 250/250 steps" in line)
    assert said and said[0] < done, result.stderr[-3000:]  # said while the run went on
    live_step = int(lines[said[0]].split("the step changed at step ", 1)[1].split(",")[0])
    assert 98 <= live_step <= 102, lines[said[0]]
    report = load_report(tmp_path / "reports" / "live")
    (change,) = report.whole_run.changes  # the one change of the script, as the live view said it
    assert change.kind == "step" and abs(change.step - live_step) <= 3
    # its computation grew, no rank came late: said as render says it (test_render_change_words.py)
    assert change.grew == "computation" and change.late_rank is None
    assert GREW_SHORT[change.grew] in lines[said[0]]
    for rank in (0, 1):
        accumulator = EventAccumulator(str(tmp_path / "traces" / "live" / "tensorboard" / "live" / f"rank{rank}"))
        accumulator.Reload()
        steps = {e.step: e.value for e in accumulator.Scalars("live/step_ms")}
        assert sorted(steps) == list(range(1, 251))
        before, after = sorted(steps[s] for s in range(20, 90)), sorted(steps[s] for s in range(120, 250))
        assert after[len(after) // 2] > 2.5 * before[len(before) // 2]
