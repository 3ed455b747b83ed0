"""The line a run that did not complete ends with, from its facts (results/rank_facts.PartialReport, StepsDone,
Refused): how far it got, where its traces and partial report are, and what to do."""

from __future__ import annotations

from pathlib import Path

from commprof.results.rank_facts import PartialReport, Refused, StepsDone

NO_TRACE = "no trace was written"


def at_step(steps: StepsDone) -> str:
    """'at step 12 of 200' (steps every rank completed, of the run's); without a known length, 'at step 12'."""
    if steps.done == 0:
        return "before the first step completed"
    return f"at step {steps.done} of {steps.total}" if steps.total else f"at step {steps.done}"


def profiled_text(window: tuple[int, int]) -> str:
    """Which steps the profiler records, counted from 1 as `at step N` counts them."""
    return f"the profiler records steps {window[0]}-{window[1]}"


def why_no_report(partial: PartialReport) -> str:
    return {
        "no_folder": "the run folder was not created",
        "no_trace": NO_TRACE,
        "nothing_completed": "no step its traces hold completed on every rank: no partial report",
        "error": f"no partial report ({partial.error})",
    }.get(partial.why_not, "")


def refused_text(refused: Refused) -> str:
    if refused.what == "compiled_cap":
        return (
            "torch.compile's DDPOptimizer needs buckets no smaller than DDP's 1 MiB first bucket, and "
            f"--bucket-cap-mb {refused.value:g} is smaller: give 1 or more"
        )
    world = int(refused.value)
    return (
        "the script's Lightning Trainer fixes its devices and nodes, whose product must be the world size launched "
        f"({world} rank{'s' if world != 1 else ''}): run it at its own world size, or give its Trainer devices='auto'"
    )


def raised_line(
    cause: str, steps: StepsDone | None, refused: Refused | None, logs: Path | None, partial: PartialReport
) -> str:
    """The script raised (its traceback shown above): when, what to do, and where its logs and partial report are."""
    when = f" {at_step(steps)}" if steps is not None else ""
    remedy = refused_text(refused) if refused is not None else "fix the script and run it again"
    where = "; ".join(
        part
        for part in (
            f"worker logs: {logs}" if logs is not None else "",
            f"partial report, marked incomplete: {partial.page}" if partial.page else "",
        )
        if part
    )
    return f"{cause}{when}; {remedy}" + (f" ({where})" if where else "")


def failed_line(cause: str, logs: Path | None, run_dir: Path | None, partial: PartialReport) -> str:
    """The job failed: its cause, its logs, and where its traces and partial report are."""
    line = f"{cause} (worker logs: {logs})" if logs is not None else cause
    if run_dir is None:
        return line
    if partial.page is not None:
        return f"{line}; traces kept in {run_dir}/, partial report (marked incomplete): {partial.page}"
    if partial.why_not == "no_trace":
        return f"{line}; {NO_TRACE} before the failure (run.json and step logs in {run_dir}/)"
    return f"{line}; traces kept in {run_dir}/, {why_no_report(partial)}"


def interrupted_line(run_dir: Path, steps: StepsDone | None, window: tuple[int, int], partial: PartialReport) -> str:
    """`interrupted at step N of M` and the partial report's page, or why there is none; `steps` None: the ranks had
    finished, the end of the launch was interrupted."""
    if steps is None:
        return f"interrupted after the last step; the run is complete (`commprof analyze {run_dir}` reports on it)"
    if partial.page is not None:
        tail = f"partial report (marked incomplete): {partial.page}"
    elif partial.why_not in ("no_trace", "nothing_completed"):
        tail = f"no profiled step completed before the interrupt ({profiled_text(window)}): no report"
    else:
        tail = why_no_report(partial)
    return f"interrupted {at_step(steps)}; {tail}"


def nothing_to_view(run_id: str, status: str, steps: StepsDone, window: tuple[int, int]) -> str:
    """`commprof view` of a run that ended before anything could be viewed."""
    ended = "was interrupted" if status == "interrupted" else "failed"
    why = (
        f"before its profiler recorded a step ({profiled_text(window)})"
        if steps.done < window[0]
        else "and no trace was written (run.json says why)"
    )
    return f"run {run_id} {ended} {at_step(steps)}, {why}: nothing to view"
