"""`commprof compare` output: one row per backend (or strategy), what each trained in its own kind's words, the
winner, and the step-time plot."""

from __future__ import annotations

import dataclasses

from commprof.render.document import Block, Document, Figure, Section, Table, Text
from commprof.render.job_text import backend_runs_as, busbw_by_size, kind_words, model_words
from commprof.results.common import PRACTICAL_SHARE, Result
from commprof.results.compare import PLURAL, BackendRun, CompareResult
from commprof.results.job import CollectiveBusbw

BY_SIZE = "busbw GB/s by collective and size"
ALL_REDUCE_BY_SIZE = "all-reduce busbw GB/s by size"  # where every run's only collective was an all-reduce (DDP's)


def row_busbw(row: BackendRun) -> list[CollectiveBusbw]:
    """Each collective the row's job ran, at each size; a result from before they were kept: its all-reduces."""
    if row.busbw:
        return row.busbw
    return [CollectiveBusbw("all_reduce", "all_reduce", int(n), bw) for n, bw in row.busbw_by_size.items() if bw]


def only_all_reduces(result: CompareResult) -> bool:
    return all(b.collective == "all_reduce" for r in result.ran() for b in row_busbw(r))


def busbw_header(result: CompareResult) -> str:
    return ALL_REDUCE_BY_SIZE if only_all_reduces(result) else BY_SIZE


def headers(result: CompareResult) -> tuple[str, ...]:
    return (
        result.compared,
        "step ms",
        "communication ms",
        "exposed ms",
        "overlap ms",
        "peak memory MiB",
        busbw_header(result),
    )


def _busbw_cell(row: BackendRun, named: bool) -> str:
    text = busbw_by_size(row_busbw(row))
    return text.removeprefix("all-reduce ") if not named else text


def rows(result: CompareResult) -> list[tuple[str, ...]]:
    named = not only_all_reduces(result)
    return [
        (
            r.name,
            f"{r.step_ms:.1f}",
            f"{r.comm_ms:.1f}",
            f"{r.exposed_comm_ms:.1f}",
            f"{r.overlap_ms:.1f}",
            f"{r.peak_memory_mb:.0f}" if r.peak_memory_mb is not None else "-",
            _busbw_cell(r, named),
        )
        if r.available
        else (r.name, f"not run: {r.reason}", "", "", "", "", "")
        for r in result.rows
    ]


def trained(row: BackendRun) -> str:
    """'gloo: FSDPSequential (265,738 parameters) under FSDP (fully_shard): reshard_after_forward=...'."""
    settings = row.settings or {}
    kind = kind_words(row.strategy, row.settings, settings.get("bucket_cap_mb"))
    return f"{row.name}: {model_words(row.model, row.parameters)} under {kind}."


def job_lines(result: CompareResult) -> list[str]:
    """What each run trained, in its kind's words (rows from before they were recorded say nothing), and where a
    backend ran a collective as another op."""
    ran = [r for r in result.ran() if r.model is not None or r.parameters is not None or r.settings is not None]
    lines = [trained(r) for r in ran]
    for row in result.ran():
        whose = "" if row.name == row.backend else f"{row.name}: "
        lines += [f"{whose}{line}" for line in backend_runs_as(row_busbw(row), row.backend)]
    return lines


def verdict_text(result: CompareResult) -> str:
    """Which run wins, and by how much, in one sentence; a result written before the verdict was facts: its words."""
    verdict = result.verdict
    if verdict is None:
        return result.summary
    by_name = {r.name: r for r in result.rows}
    if verdict.outcome == "none":
        return "Nothing could run here."
    if verdict.outcome == "only":
        return f"Only {verdict.best} could run here ({by_name[verdict.best].step_ms:.1f} ms per step)."
    best, runner_up = by_name[verdict.best], by_name[verdict.runner_up]
    if verdict.outcome == "too_few" or verdict.speedup is None:
        return (
            f"{best.name} took {best.step_ms:.1f} ms per step, {runner_up.name} {runner_up.step_ms:.1f} ms; too few "
            "unprofiled steps to tell them apart from the noise (run more --steps). No winner."
        )
    gain = verdict.speedup
    over = (
        f"over {verdict.rounds} interleaved launches each"
        if verdict.rounds
        else "one launch each: its steps' interval widened for a rerun, not the spread between launches"
    )
    steps = f"the job's step without the profiler: {best.step_ms:.1f} ms against {runner_up.step_ms:.1f} ms"
    if verdict.outcome == "no_difference":
        return (
            f"No significant difference between {best.name} and {runner_up.name}: {gain.value:.2f}x (95% CI "
            f"{gain.low:.2f}-{gain.high:.2f}, {over}), within the noise or under {PRACTICAL_SHARE:.0%} of the step "
            f"({steps})."
        )
    return (
        f"{best.name} wins: {gain.value:.2f}x faster than {runner_up.name} (95% CI {gain.low:.2f}-"
        f"{gain.high:.2f}, {over}; {steps})."
    )


def with_verdict_text(result: Result) -> Result:
    """A comparison carries its verdict in words too (`summary`), for report.json's readers."""
    if not isinstance(result, CompareResult) or result.verdict is None:
        return result
    return dataclasses.replace(result, summary=verdict_text(result))


def document(result: CompareResult) -> Document:
    table = Table(headers(result), rows(result), left=(result.compared, busbw_header(result)))
    blocks: list[Block] = [
        Text(verdict_text(result), "headline"),
        *(Text(line) for line in job_lines(result)),
        Text(
            "step ms: the job's step without the profiler, as each report leads with it (its slowest rank's median "
            "unprofiled step; where a run has none, its slowest rank's median profiled step); the rest in the profiled "
            "steps, mean over ranks."
        ),
        table,
        Figure("compare.png", f"{PLURAL[result.compared]} compared"),
        Text(f"Each {result.compared}'s full report: its folder inside this one's."),
    ]
    return Document(f"commprof compare: {result.run_id}", [Section("", blocks)])


def images(result: CompareResult) -> dict[str, bytes]:
    from commprof.render.plots import compare_plot

    return {"compare.png": compare_plot(result.ran())}
