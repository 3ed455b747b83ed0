"""A run that changed, in words made in render/ from facts built by hand: a change of step on a line of progress and
in the whole-run section (render/whole_run_view.py), and the headline of a run that went through several stretches
(render/tables.headline). test_change_point.py decides these facts from the ranks' ledgers."""

import dataclasses
import json

from commprof.render.tables import headline
from commprof.render.whole_run_view import change_line, change_text
from commprof.results.store import load_report
from commprof.results.whole_run import ChangePoint, Stretch, WholeRun, WindowCheck
from tests.golden_reports import GOLDEN

# two ranks on node0 and node1, 100 ms steps; from step 51 on, rank 1 computes 50 ms longer, rank 0 waiting for it
LATE = ChangePoint(51, 100.0, 150.0, 20.0, 45.0, "computation", late_rank=1, late_host="node1", late_ms=50.0)
# from step 51 on, the all-reduce itself takes 50 ms longer on both: no rank came late
LINK = ChangePoint(51, 100.0, 150.0, 20.0, 70.0, "communication", transfer_ms_before=20.0, transfer_ms_after=70.0)
# FSDP, DeepSpeed: only the steps were timed outside the profiler
UNTIMED = ChangePoint(61, 100.0, 200.0, 0.0, 0.0, "")


def test_a_change_names_the_rank_and_host_the_others_came_to_wait_for_or_none_for_a_link():
    assert change_line(LATE) == (
        "the step changed at step 51, 100.0 to 150.0 ms (+50%): rank 1 on node1 came late: the others waited 50.0 ms "
        "longer for it per step (its own work grew, not a link)"
    )
    assert change_line(LINK) == (
        "the step changed at step 51, 100.0 to 150.0 ms (+50%): the time with a collective in flight moved with it"
    )
    computed = dataclasses.replace(LINK, grew="computation", comm_ms_after=20.0)
    assert change_line(computed).endswith("(+50%): the time with a collective in flight did not")


def test_a_change_of_a_run_whose_collectives_were_not_timed_says_what_grew_is_not_known():
    assert change_text(UNTIMED) == (
        "the step went from 100.0 to 200.0 ms (+100%), the time with a collective in flight per step from 0.0 to 0.0 "
        "ms: no collective was timed outside the profiler, so what grew is not known"
    )


def test_the_headline_keeps_the_stretches_apart(tmp_path):
    """A report whose run changed at step 41 (400 to 800 ms): the headline says so and that the profiled steps, 8-17,
    lie in the first stretch; it quotes no one step of the whole run beside the window's shares."""
    golden = json.loads((GOLDEN / "nccl-a100-rank0-of-2.json").read_text())  # without its volatile fields
    (tmp_path / "report.json").write_text(json.dumps({**golden, "created": "", "sources": []}))
    report = load_report(tmp_path / "report.json")
    change = ChangePoint(41, 400.0, 800.0, 300.0, 700.0, "communication")
    window = WindowCheck(8, 17, 410.0, 0, 0.0, True, stretch=(1, 40))
    stretches = [Stretch(1, 40, 400.0, 300.0, 300.0), Stretch(41, 100, 800.0, 700.0, 700.0)]
    whole = WholeRun("", [0, 1], 100, 1, 700.0, 600.0, 1050.0, 0, window=window, stretches=stretches, changes=[change])
    said = headline(dataclasses.replace(report, whole_run=whole))
    assert said.startswith(
        "The job went through 2 stretches, its step 400.0, 800.0 ms (slowest rank; below); the profiled steps 8-17 "
        "lie in steps 1-40, in which "
    )
    assert "without the profiler" not in said and "% of the step is exposed communication on rank" in said
