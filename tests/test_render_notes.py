"""The report's notes and a run's unfinished state in words (render/notes_text.py, render/unfinished_words.py), from
the report's facts; the line a run that did not complete ends with (its launches: test_script_failures.py,
test_interrupt_runs.py, test_faults.py; without a process: test_unfinished_runs.py)."""

from pathlib import Path

from commprof.render.notes_text import incomplete_text, notes, rank_ranges, unfinished_text
from commprof.render.unfinished_words import (
    at_step,
    failed_line,
    interrupted_line,
    nothing_to_view,
    profiled_text,
    raised_line,
)
from commprof.results.rank_facts import PartialReport, StepsDone, Unfinished
from commprof.results.report import Report, SkippedFileInfo


def test_what_a_run_that_did_not_complete_covers():
    failed = Unfinished("failed", "rank 1 exited with 1", 8, (4, 7), missing=[1], emptied=[2])
    assert unfinished_text(failed) == (
        "the run failed (rank 1 exited with 1); 8 step(s) completed on every rank; this report covers steps 4-7, the "
        "traced ones among them; no trace from rank(s) 1; no completed traced step from rank(s) 2"
    )
    interrupted = Unfinished("interrupted", "interrupted by SIGINT", 0, None)
    assert unfinished_text(interrupted) == (
        "the run was interrupted by SIGINT; 0 step(s) completed on every rank; this report covers no traced step of "
        "them"
    )
    older = Report("r", "run", "", [], [], [], incomplete="in words")  # written before the facts: its own words
    assert incomplete_text(older) == "in words" and incomplete_text(Report("r", "run", "", [], [], [])) is None


def test_the_notes_name_missing_ranks_and_steps_without_device_work():
    report = Report(
        "r", "analysis", "", [], [], [], missing_ranks=[1, 3], empty_steps={"0": ["ProfilerStep#3"]},
        skipped=[SkippedFileInfo("x.json", "no events")], warnings=["w"],
    )  # fmt: skip
    said = notes(report)
    assert said[0] == "skipped x.json: no events" and said[-1] == "w"
    assert said[1].startswith("2 of 2 ranks have no trace here (ranks 1, 3): every figure, across ranks too, covers")
    assert said[2] == "rank 0: ProfilerStep#3 launched no device work: not counted as steps"
    assert rank_ranges([1, 2, 3, 7]) == "1-3, 7"


def test_how_the_clocks_were_aligned():
    from commprof.render.skew_text import clocks_text
    from commprof.results.report import Clocks

    assert clocks_text(Clocks("one host")) == "none needed: all ranks on one host share a clock"
    assert clocks_text(Clocks("measured", 2, 12.4)) == (
        "offsets of 2 hosts measured at start by round trips to rank 0 (run.json; error at most 12 us)"
    )
    assert clocks_text(Clocks("collectives", 3, reference=0)).startswith("aligned 3 hosts on the ends of matched")
    assert clocks_text(Clocks("", said="an older report's words")) == "an older report's words"


def test_the_cross_rank_summary_says_how_many_ranks_have_no_trace():
    """Ranks 0 and 2 of 4 traced (test_bad_traces.py analyzes such a folder)."""
    from commprof.render.skew_text import skew_summary
    from commprof.results.report import Clocks, CrossRank, RankSkew

    present = [RankSkew(rank, 0.0, 0.0, 0.0, 0, 10.0) for rank in (0, 2)]
    skew = CrossRank(present, 3, Clocks("one host"), None, 0.0, 0.5, 2)
    report = Report("r", "analysis", "", [], [], [], cross_rank=skew, missing_ranks=[1, 3])
    assert skew_summary(report) == (
        "3 collectives matched across ranks; clocks: none needed: all ranks on one host share a clock. Only the 2 "
        "ranks present: 2 have no trace here. Step time spread: 0.5 ms (slowest rank 2)."
    )


def test_a_diffs_notes():
    from commprof.render.diff import notes as diff_notes
    from commprof.results.diff import DiffResult

    once = DiffResult("a", "b", [], tested=False, slowed=[0.0, 0.6], best=["x", "y"], world_sizes=[2, 4])
    said = diff_notes(once)
    assert said[0].startswith("one launch on a side: its interval holds that launch's steps")
    assert (
        said[1] == "the profiler slowed a's recorded steps 0% and b's +60%: a change counts only beyond that gap, 60%"
    )
    assert said[2:] == ["best setting changed: x -> y", "world size differs: 2 vs 4"]
    assert diff_notes(DiffResult("a", "b", [])) == []


def test_how_far_a_run_that_did_not_complete_got():
    assert at_step(StepsDone(12, 200)) == "at step 12 of 200"
    assert at_step(StepsDone(0, 200)) == "before the first step completed"
    assert at_step(StepsDone(12, None)) == "at step 12"
    assert profiled_text((8, 17)) == "the profiler records steps 8-17"


RUN_DIR, LOGS = Path("traces/r"), Path("traces/r/logs/vm")
PAGE = PartialReport(Path("reports/r/report.html"))
NO_TRACE = PartialReport(None, "no_trace")


def test_a_script_that_raised_says_when_what_to_do_and_where_its_logs_and_report_are():
    raised = "rank 1 on vm raised the error above"  # render/failure_words.py's, for results/failure_facts.Raised
    assert raised_line(raised, StepsDone(3, None), None, LOGS, PAGE) == (
        "rank 1 on vm raised the error above at step 3; fix the script and run it again (worker logs: "
        "traces/r/logs/vm; partial report, marked incomplete: reports/r/report.html)"
    )
    assert raised_line(raised, StepsDone(0, None), None, LOGS, NO_TRACE) == (
        "rank 1 on vm raised the error above before the first step completed; fix the script and run it again "
        "(worker logs: traces/r/logs/vm)"
    )
    assert raised_line(raised, None, None, None, NO_TRACE) == f"{raised}; fix the script and run it again"


def test_a_failed_run_says_where_its_traces_and_partial_report_are_or_why_there_is_none():
    killed = "rank 1 on vm was killed by signal 9 (SIGKILL)"
    assert failed_line(killed, LOGS, RUN_DIR, NO_TRACE) == (
        "rank 1 on vm was killed by signal 9 (SIGKILL) (worker logs: traces/r/logs/vm); no trace was written before "
        "the failure (run.json and step logs in traces/r/)"
    )
    assert failed_line(killed, LOGS, RUN_DIR, PAGE) == (
        "rank 1 on vm was killed by signal 9 (SIGKILL) (worker logs: traces/r/logs/vm); traces kept in traces/r/, "
        "partial report (marked incomplete): reports/r/report.html"
    )
    assert failed_line(killed, None, None, NO_TRACE) == killed  # no run folder: the cause alone


def test_an_interrupted_run_says_how_far_it_got_and_its_partial_report_or_why_there_is_none():
    assert interrupted_line(RUN_DIR, None, (8, 17), PartialReport(None)) == (
        "interrupted after the last step; the run is complete (`commprof analyze traces/r` reports on it)"
    )
    assert interrupted_line(RUN_DIR, StepsDone(3, 200), (8, 17), NO_TRACE) == (
        "interrupted at step 3 of 200; no profiled step completed before the interrupt (the profiler records steps "
        "8-17): no report"
    )
    assert interrupted_line(RUN_DIR, StepsDone(9, 400), (4, 7), PAGE) == (
        "interrupted at step 9 of 400; partial report (marked incomplete): reports/r/report.html"
    )


def test_view_of_a_run_that_recorded_nothing_says_why():
    assert nothing_to_view("r", "interrupted", StepsDone(3, 200), (8, 17)) == (
        "run r was interrupted at step 3 of 200, before its profiler recorded a step (the profiler records steps "
        "8-17): nothing to view"
    )
    assert nothing_to_view("r", "failed", StepsDone(9, 200), (8, 17)) == (
        "run r failed at step 9 of 200, and no trace was written (run.json says why): nothing to view"
    )


def test_a_bench_across_hosts_says_which_ranks_each_holds():
    from commprof.render.bench import where
    from commprof.results.bench import BenchResult

    assert where(BenchResult("b", 2, [], [], hosts=["node0", "node1"])) == (
        "2 ranks on 2 hosts (node0: rank 0; node1: rank 1): the collectives cross the link between them."
    )
    assert where(BenchResult("b", 4, [], [], hosts=["a", "a", "b", "b"])).startswith(
        "4 ranks on 2 hosts (a: ranks 0, 1;"
    )
    assert where(BenchResult("b", 2, [], [], hosts=["vm", "vm"])) == "2 ranks."


def test_what_commprof_gave_a_script_that_torch_or_its_framework_refused():
    from commprof.render.unfinished_words import refused_text
    from commprof.results.rank_facts import Refused

    assert refused_text(Refused("compiled_cap", 0.01)).endswith("--bucket-cap-mb 0.01 is smaller: give 1 or more")
    assert "whose product must be the world size launched (1 rank)" in refused_text(Refused("lightning_world", 1))


def test_what_a_script_saw_of_itself_is_noted():
    from commprof.render.notes_text import script_notes_text
    from commprof.results.run_record import ScriptNotes, Skipped

    assert script_notes_text(ScriptNotes()) == []
    assert script_notes_text(ScriptNotes(stepped=False)) == [
        "the script made no optimizer step: its whole run is one window"
    ]
    assert script_notes_text(ScriptNotes(counted="discriminator's Adam", others=["generator's Adam"])) == [
        "steps counted are those of discriminator's Adam; the script also stepped generator's Adam"
    ]
    assert script_notes_text(ScriptNotes(deepspeed_stage=2, ddp_given=True)) == [
        "the script trains with DeepSpeed (ZeRO stage 2), not DistributedDataParallel: the DDP options given had no "
        "effect"
    ]
    assert script_notes_text(ScriptNotes(no_ddp=True)) == [
        "the script built no DistributedDataParallel: the DDP options given had no effect"
    ]
    assert script_notes_text(ScriptNotes(ddp_target="head", ddp_built=["body", "tail"])) == [
        "the script built no DDP named head (it built body, tail): the DDP options had no effect"
    ]
    assert script_notes_text(ScriptNotes(backend_asked="mpi", backend_given="gloo")) == [
        "the script's init_process_group asked for mpi; commprof gave it gloo (--backend)"
    ]
    assert script_notes_text(ScriptNotes(communicated=False))[0].startswith(
        "the script never initialized torch.distributed (dist.init_process_group): its ranks did not communicate"
    )
    assert script_notes_text(ScriptNotes(skipped=Skipped("rank 1's script failed (x)"))) == [
        "commprof's link probe and digests were skipped: rank 1's script failed (x)"
    ]
    assert script_notes_text(ScriptNotes(skipped=Skipped("Connection reset", failed=True))) == [
        "commprof's link probe and digests failed: Connection reset"
    ]
    assert script_notes_text(ScriptNotes(horovod=True))[0].startswith("the script trains with Horovod: its allreduces")
