"""`commprof compare` output: one row per backend (or strategy), the winner, and the step-time plot."""

from __future__ import annotations

from commprof.render.document import Block, Document, Figure, Section, Table, Text
from commprof.render.tables import busbw_by_size
from commprof.results.compare import PLURAL, CompareResult


def headers(result: CompareResult) -> tuple[str, ...]:
    return (
        result.compared,
        "step ms",
        "communication ms",
        "exposed ms",
        "overlap ms",
        "peak memory MiB",
        "all-reduce busbw GB/s by size",
    )


def rows(result: CompareResult) -> list[tuple[str, ...]]:
    return [
        (
            r.name,
            f"{r.step_ms:.1f}",
            f"{r.comm_ms:.1f}",
            f"{r.exposed_comm_ms:.1f}",
            f"{r.overlap_ms:.1f}",
            f"{r.peak_memory_mb:.0f}" if r.peak_memory_mb is not None else "-",
            busbw_by_size(r.busbw_by_size),
        )
        if r.available
        else (r.name, f"not run: {r.reason}", "", "", "", "", "")
        for r in result.rows
    ]


def document(result: CompareResult) -> Document:
    table = Table(headers(result), rows(result), left=(result.compared, "all-reduce busbw GB/s by size"))
    blocks: list[Block] = [
        Text(f"{result.summary}", "headline"),
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
