"""`commprof compare` output: one row per backend (or strategy), what each trained in its own kind's words, the
winner, and the step-time plot."""

from __future__ import annotations

from commprof.render.document import Block, Document, Figure, Section, Table, Text
from commprof.render.job_text import backend_runs_as, busbw_by_size, kind_words, model_words
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


def document(result: CompareResult) -> Document:
    table = Table(headers(result), rows(result), left=(result.compared, busbw_header(result)))
    blocks: list[Block] = [
        Text(f"{result.summary}", "headline"),
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
