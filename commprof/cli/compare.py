"""`commprof compare`: the same workload, seed and settings on each backend, side by side."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.options import with_run_options


@with_run_options(exclude=frozenset({"backend"}))
def compare(
    request,
    quiet: bool,
    backends: Annotated[str, typer.Option(help="Backends to compare, comma-separated.")] = "nccl,gloo,mpi",
) -> None:
    """Run the same workload on each backend; compare step time, communication, overlap and busbw."""
    from commprof.cli.common import check_model, launch_with_progress
    from commprof.cli.sweep import parse_list
    from commprof.errors import CommprofError, UsageError
    from commprof.launch.resolve import MachineProbe, new_run_id, resolve
    from commprof.pipeline import prepare_report_dir, report_from_traces, write_report

    names = parse_list("--backends", backends, str)
    if unknown := [b for b in names if b not in ("nccl", "gloo", "mpi")]:
        raise UsageError(f"unknown backend: {', '.join(unknown)} (nccl, gloo, mpi)")
    if len(set(names)) < 2:
        raise UsageError(f"--backends needs at least two different backends to compare, got {backends!r}")
    run_id = request.run_id or new_run_id()
    folder = prepare_report_dir(request.reports_dir, run_id)
    rows, probe = [], MachineProbe.detect()  # one probe for every backend
    for backend in names:
        try:
            config = resolve(dataclasses.replace(request, backend=backend, run_id=f"{run_id}-{backend}"), probe)
            check_model(config)
            console.info(f"compare: {backend} ({config.world_size} {config.device} ranks)", quiet)
            result = launch_with_progress(config, config.steps, quiet)
            report, timeline = report_from_traces([result.run_dir], name=backend, kind="run")
            (folder / backend).mkdir()
            write_report(report, folder / backend, timeline)
            rows.append(_row(backend, report))
        except CommprofError as exc:
            rows.append({"backend": backend, "available": False, "reason": str(exc)})
    summary = _summary(rows)
    (folder / "compare.json").write_text(json.dumps({"run_id": run_id, "rows": rows, "summary": summary}, indent=2))
    from commprof.render.html import render_compare_html

    png = _plot(rows, folder / "compare.png")
    (folder / "report.md").write_text(_markdown(run_id, rows, summary))
    (folder / "report.html").write_text(render_compare_html(run_id, rows, summary, png))
    if console.json_mode():
        console.out.print(json.dumps({"run_id": run_id, "rows": rows, "summary": summary}), markup=False)
        return
    if not quiet:
        console.out.print(_markdown(run_id, rows, summary), markup=False)
    console.out.print(f"compare: {folder / 'report.html'} (also report.md, compare.json, compare.png, one full report "
                      "per backend)", markup=False)


def _row(backend: str, report) -> dict:
    mean = lambda attr: statistics.fmean(getattr(r, attr) for r in report.ranks)  # noqa: E731
    return {
        "backend": backend, "available": True,
        "step_ms": statistics.median(r.step_time_ms.median for r in report.ranks),
        "comm_ms": mean("comm_ms"), "exposed_comm_ms": mean("exposed_comm_ms"), "overlap_ms": mean("overlap_ms"),
        "busbw_by_size": {str(c.bytes): c.busbw_gbps for c in report.collectives if c.op == "all_reduce" and c.bytes},
    }


def _summary(rows: list[dict]) -> str:
    ran = sorted((r for r in rows if r["available"]), key=lambda r: r["step_ms"])
    if not ran:
        return "No backend could run here."
    if len(ran) == 1:
        return f"Only {ran[0]['backend']} could run here ({ran[0]['step_ms']:.1f} ms per step)."
    best, runner_up = ran[0], ran[1]
    return (f"{best['backend']} wins: {best['step_ms']:.1f} ms per step, {runner_up['step_ms'] / best['step_ms']:.2f}x "
            f"faster than {runner_up['backend']} ({runner_up['step_ms']:.1f} ms).")


def _markdown(run_id: str, rows: list[dict], summary: str) -> str:
    from commprof.render.tables import busbw_by_size

    lines = [f"# commprof compare: {run_id}", "", f"**{summary}**", "",
             "| backend | step ms (median) | communication ms | exposed ms | overlap ms | all-reduce busbw GB/s by size |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if r["available"]:
            lines.append(f"| {r['backend']} | {r['step_ms']:.1f} | {r['comm_ms']:.1f} | {r['exposed_comm_ms']:.1f} | "
                         f"{r['overlap_ms']:.1f} | {busbw_by_size(r['busbw_by_size'])} |")
        else:
            lines.append(f"| {r['backend']} | not run: {r['reason']} | | | | |")
    return "\n".join(lines + ["", "![compare](compare.png)", ""])


def _plot(rows: list[dict], path: Path) -> bytes:
    from commprof.render.plots import compare_plot

    png = compare_plot([r for r in rows if r["available"]])
    path.write_bytes(png)
    return png
