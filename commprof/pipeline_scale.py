"""`commprof scale`: the same workload at several world sizes, interleaved; then efficiency and predictions."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from commprof.analysis.predict import (LinkModel, StepProfile, fit_compute, fit_link, rebucket, simulate_step,
                                       step_profile)
from commprof.analysis.scaling import ScaleReport, SizeMeasurement, job_step_times, predict, scale_points
from commprof.config import RunConfig
from commprof.errors import UsageError
from commprof.launch.runlog import read_run_json
from commprof.pipeline import prepare_report_dir, report_and_trace, write_report


@dataclass(frozen=True)
class ScalePlan:
    name: str
    configs: dict[int, RunConfig]  # world size -> the run at that size (run_id gets a repeat suffix)
    repeats: int
    strong: bool
    base_lr: float
    predict_sizes: list[int]
    link: LinkModel | None  # None: fitted to the measured all-reduces
    parameters: int
    parameter_bytes: list[int]  # per parameter, registration order (for re-bucketing)

    def order(self) -> list[int]:
        """ABBA: sizes up, then down, so drift over time hits every size alike."""
        sizes = sorted(self.configs)
        return [n for r in range(self.repeats) for n in (sizes if r % 2 == 0 else sizes[::-1])]


def run_scale(plan: ScalePlan, launch: Callable[[RunConfig], Path], reports_dir: Path) -> ScaleReport:
    """Launch every size in the interleaved order; each run also gets its own full report."""
    measured: dict[int, list[SizeMeasurement]] = {}
    profiles: dict[int, list[StepProfile]] = {}
    runs, done = [], {n: 0 for n in plan.configs}
    for n in plan.order():
        done[n] += 1
        config = dataclasses.replace(plan.configs[n], run_id=f"{plan.name}-ws{n}-r{done[n]}")
        run_dir = launch(config)
        report, trace, timeline = report_and_trace(run_dir, name=config.run_id)
        write_report(report, prepare_report_dir(reports_dir, config.run_id), timeline)
        measured.setdefault(n, []).append(_measurement(n, report, read_run_json(run_dir), config))
        profiles.setdefault(n, []).append(step_profile(trace))
        runs.append(config.run_id)
    first = plan.configs[min(plan.configs)]
    points = scale_points(measured, {n: c.batch_size for n, c in plan.configs.items()}, plan.base_lr)
    scale = ScaleReport(name=plan.name, mode="strong" if plan.strong else "weak", model=first.model,
                        parameters=plan.parameters, device=first.device,
                        backend=first.backend, bucket_cap_mb=first.ddp.bucket_cap_mb, base_learning_rate=plan.base_lr,
                        points=points, runs=runs, order=plan.order())
    every = [p for ps in profiles.values() for p in ps]
    if not any(n >= 2 for n in profiles) and plan.link is None:
        return scale
    link = plan.link or fit_link(every)
    compute = fit_compute(every)
    reference = _median_profile(profiles[max(profiles)])
    overhead = statistics.median(statistics.median(m.job_step_ms) / m.profiled_step_ms
                                 for ms in measured.values() for m in ms)
    buckets = rebucket(reference, None, None)
    points = [dataclasses.replace(p, predicted_step_ms=simulate_step(reference, compute, link, p.world_size, buckets)[0]
                                  * overhead) for p in points]
    predictions = predict(points, reference, compute, link, plan.predict_sizes, first.batch_size, plan.strong,
                          plan.base_lr, overhead, plan.parameter_bytes) if plan.predict_sizes else []
    return dataclasses.replace(scale, points=points, predictions=predictions, link=dataclasses.asdict(link),
                               compute=dataclasses.asdict(compute), profiling_overhead=overhead)


def _measurement(n: int, report, run: dict | None, config: RunConfig) -> SizeMeasurement:
    if run is None:
        raise UsageError(f"{config.run_dir}: no run.json; cannot measure world size {n}")
    mean = lambda attr: statistics.fmean(getattr(r, attr) for r in report.ranks)  # noqa: E731
    reduces = [c for c in report.collectives if c.op == "all_reduce" and c.bytes and c.busbw_gbps is not None]
    largest = max(reduces, key=lambda c: c.bytes) if reduces else None
    return SizeMeasurement(
        world_size=n, job_step_ms=job_step_times(run, run["config"]["schedule"]),
        profiled_step_ms=statistics.median(r.step_time_ms.median for r in report.ranks),
        compute_ms=mean("compute_ms"), exposed_comm_ms=mean("exposed_comm_ms"), idle_ms=mean("idle_ms"),
        allreduce_busbw_gbps=largest.busbw_gbps if largest and n > 1 else None)


def _median_profile(profiles: list[StepProfile]) -> StepProfile:
    ordered = sorted(profiles, key=lambda p: p.step_ms)
    return ordered[len(ordered) // 2]


def write_scale(report: ScaleReport, folder: Path) -> Path:
    from commprof.render.scale import render_html, render_markdown, scale_plot

    png = scale_plot(report)
    (folder / "scale.png").write_bytes(png)
    (folder / "report.json").write_text(report.to_json())
    (folder / "report.md").write_text(render_markdown(report))
    (folder / "report.html").write_text(render_html(report, png))
    return folder / "report.html"
