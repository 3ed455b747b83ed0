"""`commprof compare`: the same workload, seed and settings on each backend, side by side."""

from __future__ import annotations

import dataclasses
import statistics

from commprof.commands.common import check_model, ddp_only
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import prepare_report_dir, report_from_traces
from commprof.config import BACKENDS, RunRequest
from commprof.errors import CommprofError, UsageError
from commprof.results.compare import BackendRun, CompareResult
from commprof.results.report import Report


def compare(request: RunRequest, backends: list[str], feedback: Feedback = SILENT) -> Outcome:
    """One run per backend (one that cannot run here is listed with the reason); each backend's full
    report goes in a folder of its own inside the comparison's."""
    ddp_only(request, "compare")
    from commprof.launch.job import run_job
    from commprof.launch.resolve import MachineProbe, new_run_id, resolve
    from commprof.render.outputs import write_result

    if unknown := [b for b in backends if b not in BACKENDS]:
        raise UsageError(f"unknown backend: {', '.join(unknown)} ({', '.join(BACKENDS)})")
    if len(set(backends)) < 2:
        raise UsageError(f"--backends needs at least two different backends to compare, got {','.join(backends)!r}")
    run_id = request.run_id or new_run_id()
    folder = prepare_report_dir(request.reports_dir, run_id)
    rows, probe = [], MachineProbe.detect()  # one probe for every backend
    for backend in backends:
        try:
            config = resolve(dataclasses.replace(request, backend=backend, run_id=f"{run_id}-{backend}"), probe)
            check_model(config, feedback)
            feedback.info(f"compare: {backend} ({config.world_size} {config.device} ranks)")
            launched = run_job(config, total_steps=config.steps, watch=feedback.watch)
            report, timeline = report_from_traces([launched.run_dir], name=backend, kind="run")
            (folder / backend).mkdir()
            write_result(report, folder / backend, timeline, launched.run_dir / "tensorboard")
            rows.append(backend_run(backend, report))
        except CommprofError as exc:
            rows.append(BackendRun(backend=backend, available=False, reason=str(exc)))
    result = CompareResult(run_id=run_id, rows=rows, summary=summary(rows))
    return Outcome(result, write_result(result, folder))


def backend_run(backend: str, report: Report) -> BackendRun:
    def mean(attr: str) -> float:
        return statistics.fmean(getattr(r, attr) for r in report.ranks)

    return BackendRun(backend=backend, available=True,
                      step_ms=statistics.median(r.step_time_ms.median for r in report.ranks),
                      comm_ms=mean("comm_ms"), exposed_comm_ms=mean("exposed_comm_ms"), overlap_ms=mean("overlap_ms"),
                      busbw_by_size={str(c.bytes): c.busbw_gbps for c in report.collectives
                                     if c.op == "all_reduce" and c.bytes})


def summary(rows: list[BackendRun]) -> str:
    ran = sorted((r for r in rows if r.available), key=lambda r: r.step_ms)
    if not ran:
        return "No backend could run here."
    if len(ran) == 1:
        return f"Only {ran[0].backend} could run here ({ran[0].step_ms:.1f} ms per step)."
    best, runner_up = ran[0], ran[1]
    return (f"{best.backend} wins: {best.step_ms:.1f} ms per step, {runner_up.step_ms / best.step_ms:.2f}x "
            f"faster than {runner_up.backend} ({runner_up.step_ms:.1f} ms).")
