"""`commprof compare`: the same workload, seed and settings on each backend (or strategy), side by side."""

from __future__ import annotations

import dataclasses
import statistics
from typing import cast

from commprof.analysis.distortion import unprofiled_job_steps
from commprof.analysis.launch_stats import decided, paired_speedup
from commprof.analysis.ran_as import busbw_by_size, job_as_run, kind_ran
from commprof.analysis.stats import real_speedup, rerun_interval, speedup_ci
from commprof.backends import BACKENDS, by_name
from commprof.commands.common import check_model, ddp_only, prepare_figures, training
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import prepare_report_dir, report_from_traces
from commprof.config import RunRequest
from commprof.errors import CommprofError, UsageError
from commprof.render import progress_words
from commprof.render.failure_words import error_text
from commprof.results.common import Estimate
from commprof.results.compare import PLURAL, BackendRun, CompareResult, CompareVerdict
from commprof.results.report import Report
from commprof.settings import BUILT_IN_STRATEGIES


def compare(
    request: RunRequest,
    backends: list[str],
    feedback: Feedback = SILENT,
    strategies: list[str] | None = None,
    repeats: int = 3,
) -> Outcome:
    """`repeats` interleaved launches per backend, or per strategy on the request's backend (one that cannot run
    here is listed with the reason), so that the winner is claimed over the spread between launches; the first
    launch's full report goes in a folder of its own inside the comparison's."""
    if repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {repeats}")
    ddp_only(request, "compare", " (to compare DDP with FSDP: --strategies ddp,fsdp)")
    if request.script and strategies:
        raise UsageError("--strategies compares commprof's own models; a script builds its own DDP, FSDP or DeepSpeed")
    from commprof.commands.run import check_script
    from commprof.launch import forkserver
    from commprof.launch.job import run_job
    from commprof.launch.resolve import MachineProbe, new_run_id, resolve
    from commprof.launch.runlog import read_run_json
    from commprof.launch.script_run import finish_script_run
    from commprof.render.outputs import write_result

    compared, names, allowed = (
        ("strategy", strategies, BUILT_IN_STRATEGIES) if strategies else ("backend", backends, BACKENDS)
    )
    if unknown := [n for n in names if n not in allowed]:
        raise UsageError(f"unknown {compared}: {', '.join(unknown)} ({', '.join(allowed)})")
    if len(set(names)) < 2:
        plural = PLURAL[compared]
        raise UsageError(f"--{plural} needs at least two different {plural} to compare, got {','.join(names)!r}")
    run_id = request.run_id or new_run_id()
    folder = prepare_report_dir(request.reports_dir, run_id)
    forkserver.start_early(request)
    rows: dict[str, BackendRun] = {}
    probe = MachineProbe.detect()  # one probe for every run
    budget = 2 * repeats if repeats > 1 else 1
    for repeat in range(1, budget + 1):
        if repeat > repeats and _decided(list(rows.values())):
            break
        if repeat > repeats:
            feedback.info(progress_words.compare_undecided(repeat - 1, budget))
        for name in names:
            if name in rows and not rows[name].available:
                continue
            suffix = "" if repeat == 1 else f"-r{repeat}"
            try:
                config = resolve(
                    dataclasses.replace(
                        request,
                        backend=request.backend if compared == "strategy" else name,
                        strategy=name if compared == "strategy" else request.strategy,
                        run_id=f"{run_id}-{name}{suffix}",
                        named=(*request.named, "backend") if compared == "backend" else request.named,
                    ),
                    probe,
                )
                if config.script:
                    check_script(request)
                    if by_name(config.backend).launched_by == "mpirun":
                        raise UsageError(f"{name}: a script runs under torch's launcher here; {name} needs mpirun")
                else:
                    check_model(config, feedback)
                what = " ".join(config.script) if config.script else config.strategy
                on = f"{config.world_size} {config.device}"
                numbered = repeat if repeats > 1 else None
                feedback.info(
                    progress_words.compare_launch(name, on, config.backend, what, numbered, (repeats, budget))
                )
                prepare_figures()
                steps = config.max_steps if config.script else config.steps
                launched = run_job(config, training(config), steps, feedback.watch)
                if config.script:
                    finish_script_run(launched.run_dir, config.launch_id)
                record = read_run_json(launched.run_dir)
                job_steps = unprofiled_job_steps(record) if record else []
                launch = [statistics.median(job_steps)] if job_steps else []
                if repeat > 1:
                    rows[name] = dataclasses.replace(rows[name], launch_ms=rows[name].launch_ms + launch)
                    continue
                report, timeline = report_from_traces([launched.run_dir], name=name, kind="run")
                (folder / name).mkdir()
                write_result(report, folder / name, timeline, launched.run_dir / "tensorboard")
                job = job_as_run(config, record, kind_ran(config, record, report.collectives))
                row = backend_run(config.backend, report, job.strategy, name)
                rows[name] = dataclasses.replace(
                    row,
                    job_steps_ms=job_steps,
                    launch_ms=launch,
                    model=job.model,
                    parameters=job.parameters,
                    settings=job.settings,
                )
            except CommprofError as exc:
                rows[name] = BackendRun(
                    backend=request.backend if compared == "strategy" else name,
                    available=False,
                    reason=error_text(exc),
                    label=name,
                )
    ran = list(rows.values())
    result = CompareResult(run_id=run_id, rows=ran, compared=compared, verdict=verdict(ran))
    return Outcome(result, write_result(result, folder))


def backend_run(backend: str, report: Report, strategy: str | None = "ddp", label: str = "") -> BackendRun:
    def mean(attr: str) -> float:
        return statistics.fmean(getattr(r, attr) for r in report.ranks)

    run = report.run
    busbw = busbw_by_size(report.collectives)
    # peak_gpu_memory_mb lists only the ranks that measured "allocated"
    gpu = [p["allocated"] for p in run.peak_gpu_memory_mb.values()] if run else []
    peaks = gpu or (list(run.peak_rss_mb.values()) if run else [])
    return BackendRun(
        backend=backend,
        available=True,
        # the figure its own report leads with, its step without the profiler (else its slowest rank's profiled one)
        step_ms=report.job_step.unprofiled_ms if report.job_step else max(r.step_time_ms.median for r in report.ranks),
        comm_ms=mean("comm_ms"),
        exposed_comm_ms=mean("exposed_comm_ms"),
        overlap_ms=mean("overlap_ms"),
        busbw_by_size={str(b.bytes): b.busbw_gbps for b in busbw if b.collective == "all_reduce"},
        busbw=busbw,
        strategy=strategy,
        peak_memory_mb=max(peaks) if peaks else None,
        label=label or backend,
    )


def _decided(rows: list[BackendRun]) -> bool:
    """Whether more launches can change the verdict: the two fastest runs' speedup, over their launches, names a
    winner or rules out one of 3% (launch_stats.decided); a single run that ran has nothing to decide."""
    ran = sorted((r for r in rows if r.available and len(r.launch_ms) >= 2), key=_pace)
    if len(ran) < 2:
        return True
    best, runner_up = ran[0], ran[1]
    keys = [str(i) for i in range(min(len(best.launch_ms), len(runner_up.launch_ms)))]
    return decided(
        paired_speedup(
            dict(zip(keys, runner_up.launch_ms, strict=False)), dict(zip(keys, best.launch_ms, strict=False))
        )
    )


def _pace(row: BackendRun) -> float:
    """What orders the runs: the geometric mean of its launches' steps, else its one launch's step."""
    if row.launch_ms:
        return statistics.geometric_mean(row.launch_ms)
    return cast(float, row.step_ms)  # a run that ran has one


def verdict(rows: list[BackendRun]) -> CompareVerdict:
    """Which run wins: the fastest against the runner-up, over their interleaved launches (the spread between them is
    the noise, analysis/launch_stats), else over one launch's unprofiled steps, widened for a rerun."""
    ran = sorted((r for r in rows if r.available), key=_pace)
    if not ran:
        return CompareVerdict("none")
    if len(ran) == 1:
        return CompareVerdict("only", ran[0].name)
    best, runner_up = ran[0], ran[1]
    rounds = min(len(best.launch_ms), len(runner_up.launch_ms))
    if rounds >= 2:
        keys = [str(i) for i in range(rounds)]
        gain = paired_speedup(
            dict(zip(keys, runner_up.launch_ms, strict=False)), dict(zip(keys, best.launch_ms, strict=False))
        )
        if gain.value < 1:
            best, runner_up, gain = runner_up, best, Estimate(1 / gain.value, 1 / gain.high, 1 / gain.low)
    elif len(best.job_steps_ms) < 2 or len(runner_up.job_steps_ms) < 2:
        return CompareVerdict("too_few", best.name, runner_up.name)
    else:
        gain, rounds = rerun_interval(speedup_ci(runner_up.job_steps_ms, best.job_steps_ms), ratio=True), 0
    outcome = "wins" if real_speedup(gain) else "no_difference"
    return CompareVerdict(outcome, best.name, runner_up.name, gain, rounds)
