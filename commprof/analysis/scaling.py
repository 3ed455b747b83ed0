"""Scaling efficiency from runs at several world sizes, and predictions at sizes not run."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, field

from commprof.analysis.distortion import unprofiled_job_steps
from commprof.analysis.launch_stats import setting_step
from commprof.analysis.predict import CANDIDATE_CAPS_MB, ComputeModel, LinkModel, StepProfile, rebucket, simulate_step
from commprof.analysis.ran_as import mean_by_collective
from commprof.analysis.stats import median_ci
from commprof.results.common import job_steps
from commprof.results.job import CollectiveBusbw
from commprof.results.run_record import RunRecord
from commprof.results.scale import Prediction, ScalePoint


@dataclass(frozen=True)
class SizeMeasurement:
    """One launch at one world size: the job's step times outside the profiler window, and its report."""

    world_size: int
    job_step_ms: list[float]  # per unprofiled step, the slowest rank's time
    profiled_step_ms: float  # median window of the profiled steps (the traces)
    compute_ms: float
    exposed_comm_ms: float
    idle_ms: float
    allreduce_busbw_gbps: float | None  # of the job's largest all-reduce (FSDP's reduce-scatter is none, on any op)
    busbw: list[CollectiveBusbw] = field(default_factory=list)  # each collective the job ran: its largest call's


def job_step_times(run: RunRecord) -> list[float]:
    """Per step the profiler did not touch (after the first few), the slowest rank's time; every step but the
    first when the run has no such step."""
    every = job_steps([r.step_ms for r in run.ranks])
    return unprofiled_job_steps(run) or every[1:] or every


def scale_points(
    measured: dict[int, list[SizeMeasurement]], per_rank_batch: dict[int, int], base_lr: float
) -> list[ScalePoint]:
    """Throughput from each size's step; speedup against the smallest size. A size run two or more times: each run
    is one value (the median of its unprofiled steps), the step their geometric mean with Student's t over the runs
    (launch_stats.setting_step: the spread between launches, not the steps'); run once, its steps' median."""
    sizes = sorted(measured)
    base = sizes[0]
    points = []
    for n in sizes:
        runs = measured[n]
        launches = {str(i): statistics.median(m.job_step_ms) for i, m in enumerate(runs) if m.job_step_ms}
        steps = [t for m in runs for t in m.job_step_ms]
        estimate = setting_step(launches) if len(launches) >= 2 else median_ci(steps)
        batch = per_rank_batch[n] * n
        rate = batch / (estimate.value / 1000)
        points.append(
            ScalePoint(
                world_size=n,
                global_batch=batch,
                per_rank_batch=per_rank_batch[n],
                learning_rate=base_lr * batch / (per_rank_batch[base] * base),
                step_ms=estimate,
                samples_per_s=rate,
                speedup=0.0,
                efficiency=0.0,
                compute_ms=statistics.fmean(m.compute_ms for m in runs),
                exposed_comm_ms=statistics.fmean(m.exposed_comm_ms for m in runs),
                idle_ms=statistics.fmean(m.idle_ms for m in runs),
                allreduce_busbw_gbps=_mean_or_none([m.allreduce_busbw_gbps for m in runs]),
                busbw=mean_by_collective([m.busbw for m in runs]),
            )
        )
    base_rate = points[0].samples_per_s
    return [
        dataclasses.replace(
            p, speedup=p.samples_per_s / base_rate, efficiency=p.samples_per_s / base_rate / (p.world_size / base)
        )
        for p in points
    ]


def _mean_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def predict(
    points: list[ScalePoint],
    reference: StepProfile,
    compute: ComputeModel,
    link: LinkModel,
    sizes: list[int],
    per_rank_batch: int,
    strong: bool,
    base_lr: float,
    overhead: float,
    parameter_bytes: list[int],
) -> list[Prediction]:
    """The step at each size (the measured buckets), and the best cap among DDP-style re-bucketings."""
    base = points[0]
    measured_buckets = rebucket(reference, None, None)
    predictions = []
    for n in sizes:
        per_rank = max(1, base.global_batch // n) if strong else per_rank_batch
        step, exposed = simulate_step(reference, compute, link, n, measured_buckets)
        caps = [c for c in CANDIDATE_CAPS_MB if c * 1024 * 1024 < 2 * sum(parameter_bytes)] or [CANDIDATE_CAPS_MB[0]]
        by_cap = {
            c: simulate_step(reference, compute, link, n, rebucket(reference, parameter_bytes, c))[0] for c in caps
        }
        best = min(by_cap, key=lambda c: by_cap[c])
        step_ms = step * overhead
        rate = per_rank * n / (step_ms / 1000)
        predictions.append(
            Prediction(
                world_size=n,
                global_batch=per_rank * n,
                learning_rate=base_lr * per_rank * n / base.global_batch,
                step_ms=step_ms,
                exposed_comm_ms=exposed,
                samples_per_s=rate,
                speedup=rate / base.samples_per_s,
                efficiency=rate / base.samples_per_s / (n / base.world_size),
                best_bucket_cap_mb=float(best),
                best_step_ms=by_cap[best] * overhead,
            )
        )
    return predictions
