"""Predict the step time at world sizes that were not run, from what was measured.

Measured (per world size, from the traces): the time before the backward pass (F), the backward
compute up to the last bucket ready (Bw), the tail after backward and communication (optimizer,
T), every bucket's size and ready time as a fraction of Bw, and the all-reduce transfer times.

Model (docs/prediction.md): a ring all-reduce of S bytes on n ranks takes
    t(S, n) = 2(n-1)·alpha + 2(n-1)/n · S/B
Buckets all-reduce one after another in the order they become ready, each starting when it is
ready and the previous one is done; the step is F + Bw + max(0, last all-reduce end - Bw) + T.
Compute per rank at size n follows a straight line fitted over the measured sizes (flat on GPUs;
growing on a CPU host whose cores the ranks share)."""

from __future__ import annotations

import itertools
import random
import re
import statistics
from dataclasses import dataclass, field
from typing import Callable

from commprof.analysis.buckets import GRADIENT_OPS, ready_at
from commprof.errors import UsageError
from commprof.kinds.ddp_buckets import layout
from commprof.results.finding_facts import LinkSource
from commprof.results.run_record import ProbedSize
from commprof.trace.model import RunTrace

MB = 1024 * 1024
CANDIDATE_CAPS_MB = (1, 2, 5, 10, 25, 50, 100, 200, 400)


@dataclass(frozen=True)
class LinkModel:
    alpha_us: float  # per ring step
    bandwidth_gbps: float  # B: bytes per second per rank's link, in GB/s (= nccl-tests busbw)
    source: LinkSource

    def allreduce_us(self, nbytes: float, ranks: int) -> float:
        if ranks < 2:
            return 0.0
        return 2 * (ranks - 1) * self.alpha_us + 2 * (ranks - 1) / ranks * nbytes / (self.bandwidth_gbps * 1e3)


@dataclass(frozen=True)
class StepProfile:
    """Medians over profiled steps and ranks at one world size; times in ms."""

    world_size: int
    before_backward_ms: float
    backward_ms: float
    tail_ms: float
    exposed_ms: float
    bucket_bytes: list[int]  # in the order the buckets became ready
    bucket_ready: list[float]  # fraction of backward_ms at which each became ready
    # (bytes, ranks, us), fastest rank; only all-reduces that ran alone (the link model's durations)
    transfers: list[tuple[int, int, float]] = field(default_factory=list)

    @property
    def compute_ms(self) -> float:
        return self.before_backward_ms + self.backward_ms + self.tail_ms

    @property
    def step_ms(self) -> float:
        return self.compute_ms + self.exposed_ms


def step_profile(trace: RunTrace) -> StepProfile:
    """The measured shape of one step, from a DDP run's traces. A run without gradient all-reduces (one
    rank: NCCL launches no kernel for a group of one) gives the shape of its computation alone."""
    parts: dict[str, list[float]] = {"before": [], "backward": [], "tail": [], "exposed": []}
    alone: dict[str, list[float]] = {"before": [], "backward": [], "tail": [], "exposed": []}
    buckets: dict[int, list[tuple[int, float]]] = {}
    transfer: dict[tuple[int, int], tuple[int, float]] = {}
    world = max((r.world_size or len(trace.ranks)) for r in trace.ranks)
    for rank in trace.ranks:
        ends = rank.backward_ends or (None,) * len(rank.steps)
        for number, (step, backward, finalized) in enumerate(zip(rank.steps, rank.backward_starts, ends, strict=False)):
            if backward is None:
                continue
            calls = sorted(
                (
                    c
                    for c in rank.collectives
                    if c.op in GRADIENT_OPS and step.start <= c.start < step.end and c.ready is not None and c.nbytes
                ),
                key=ready_at,
            )
            if not calls:
                backward_end = finalized if finalized is not None else step.end
                for name, value in (
                    ("before", backward - step.start),
                    ("backward", backward_end - backward),
                    ("tail", step.end - backward_end),
                    ("exposed", 0.0),
                ):
                    alone[name].append(max(0.0, value) / 1000)
                continue
            backward_us = ready_at(calls[-1]) - backward
            comm_end = max(c.end for c in calls)
            parts["before"].append((backward - step.start) / 1000)
            parts["backward"].append(backward_us / 1000)
            parts["exposed"].append(max(0.0, comm_end - ready_at(calls[-1])) / 1000)
            parts["tail"].append(max(0.0, step.end - max(comm_end, ready_at(calls[-1]))) / 1000)
            for index, call in enumerate(calls):
                fraction = (ready_at(call) - backward) / backward_us if backward_us > 0 else 1.0
                buckets.setdefault(index, []).append((call.nbytes or 0, fraction))
                if any(other is not call and other.start < call.end and call.start < other.end for other in calls):
                    continue  # in flight beside another (Gloo's threads): its duration is not its own transfer time
                key = (number, index)
                duration = call.end - call.start
                if key not in transfer or duration < transfer[key][1]:
                    transfer[key] = (call.nbytes or 0, duration)
    if not parts["backward"]:
        parts = alone
    if not parts["backward"]:
        raise UsageError("no DDP backward pass in the traces: nothing to predict from")
    return StepProfile(
        world_size=world,
        before_backward_ms=statistics.median(parts["before"]),
        backward_ms=statistics.median(parts["backward"]),
        tail_ms=statistics.median(parts["tail"]),
        exposed_ms=statistics.median(parts["exposed"]),
        bucket_bytes=[statistics.median_low(b for b, _ in buckets[i]) for i in sorted(buckets)],
        bucket_ready=[min(1.0, max(0.0, statistics.median(f for _, f in buckets[i]))) for i in sorted(buckets)],
        transfers=[(nbytes, world, us) for nbytes, us in transfer.values()],
    )


def fit_link(profiles: list[StepProfile]) -> LinkModel:
    """Least squares of t = alpha·2(n-1) + (1/B)·2(n-1)/n·S over every measured all-reduce (n >= 2)."""
    transfers = [(nbytes, n, us) for p in profiles for nbytes, n, us in p.transfers if n >= 2]
    if len(transfers) < 2:
        raise UsageError(
            "fitting the link needs all-reduces measured at 2 ranks or more: add a world size >= 2, "
            "or give --link BANDWIDTH,LATENCY"
        )
    sizes = sorted({n for _, n, _ in transfers})
    return fit_transfers(transfers, LinkSource("fitted", calls=len(transfers), ranks=sizes))


def probed_link(
    probe: list[ProbedSize], ranks: int, pick: Callable[[list[float]], list[float]] | None = None
) -> LinkModel:
    """The link from the run's own probe (instrument/link_probe.py: all-reduces timed alone): bandwidth from the
    smallest and largest sizes, latency what the smallest takes beyond its bytes; each size's time is the lower
    quartile of its repeats (a busy host only adds time: preemption, a late thread). `pick(times)` chooses each
    size's times (a bootstrap's resample); by default all of them."""
    small, large = min(probe, key=lambda r: r.bytes), max(probe, key=lambda r: r.bytes)
    t_small, t_large = (_lower_quartile(pick(r.us) if pick else r.us) for r in (small, large))
    bus = 2 * (ranks - 1) / ranks
    inverse_bw = max(t_large - t_small, 1e-9) / (bus * (large.bytes - small.bytes))  # us per byte
    alpha = max(0.0, t_small - bus * small.bytes * inverse_bw) / (2 * (ranks - 1))
    return LinkModel(
        alpha,
        1 / inverse_bw / 1e3,
        LinkSource("probe", smallest=small.bytes, largest=large.bytes),
    )


def run_link(samples: list[StepProfile], probe: list[ProbedSize], rng: random.Random | None = None) -> LinkModel:
    """The run's link: from its probe (its repeats resampled with `rng`, for a bootstrap), or fitted to the steps'
    own all-reduces where it has none."""
    if not probe:
        return fit_link(samples)
    return probed_link(probe, samples[0].world_size, (lambda t: rng.choices(t, k=len(t))) if rng else None)


def probed_transfers(probe: list[ProbedSize], ranks: int) -> list[tuple[int, int, float]]:
    """(bytes, ranks, us) per probed size, at its repeats' lower quartile: what fit_transfers takes, so that probes
    at several world sizes fit one link (commprof scale)."""
    return [(row.bytes, ranks, _lower_quartile(row.us)) for row in probe]


def _lower_quartile(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 4]


def fit_transfers(transfers: list[tuple[int, int, float]], source: LinkSource) -> LinkModel:
    """Least squares of t = alpha·2(n-1) + (1/B)·2(n-1)/n·S over (S bytes, n ranks, t us)."""
    rows = [(2 * (n - 1), 2 * (n - 1) / n * nbytes, us) for nbytes, n, us in transfers]
    sxx = sum(a * a for a, _, _ in rows)
    sxy = sum(a * b for a, b, _ in rows)
    syy = sum(b * b for _, b, _ in rows)
    sxt = sum(a * t for a, _, t in rows)
    syt = sum(b * t for _, b, t in rows)
    det = sxx * syy - sxy * sxy
    alpha, inverse_bw = ((syy * sxt - sxy * syt) / det, (sxx * syt - sxy * sxt) / det) if det > 0 else (0.0, 0.0)
    if inverse_bw <= 0:  # sizes too alike to separate the terms: bandwidth from the largest messages alone
        alpha = 0.0
        inverse_bw = syt / syy
    alpha = max(alpha, 0.0)
    return LinkModel(alpha, 1 / inverse_bw / 1e3, source)


def parse_link(text: str) -> LinkModel:
    """'25GB/s,5us' (also Gb/s, MB/s; us, ms)."""
    match = re.fullmatch(r"\s*([\d.]+)\s*(GB|Gb|MB)/s\s*,\s*([\d.]+)\s*(us|ms)\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"--link must look like 25GB/s,5us (bandwidth, per-step latency), got {text!r}")
    value, unit, latency, latency_unit = match.groups()
    gbps = float(value) * {"GB": 1.0, "Gb": 1 / 8, "MB": 1e-3}[unit]
    alpha = float(latency) * (1000 if latency_unit == "ms" else 1)
    return LinkModel(alpha, gbps, LinkSource("given", given=text.strip()))


@dataclass(frozen=True)
class ComputeModel:
    """Compute per rank and step against world size: intercept + slope·n (ms)."""

    intercept_ms: float
    slope_ms: float

    def at(self, ranks: int) -> float:
        return self.intercept_ms + self.slope_ms * ranks


def fit_compute(profiles: list[StepProfile]) -> ComputeModel:
    """A least-squares line through the measured sizes; never decreasing. Flat where every rank has its
    own GPU; rising where ranks share the cores of one CPU host."""
    points = [(p.world_size, p.compute_ms) for p in profiles]
    if len({n for n, _ in points}) < 2:
        return ComputeModel(statistics.fmean(c for _, c in points), 0.0)
    slope, intercept = statistics.linear_regression([n for n, _ in points], [c for _, c in points])
    if slope < 0:
        return ComputeModel(statistics.fmean(c for _, c in points), 0.0)
    return ComputeModel(intercept, slope)


def rebucket(
    reference: StepProfile, parameter_bytes: list[int] | None, cap_mb: float | None
) -> list[tuple[int, float]]:
    """(bytes, ready fraction) per bucket: as measured, or for an explicit cap with the buckets DDP rebuilds
    after its first step (analysis/ddp_buckets.layout) and ready times interpolated along the measured buckets
    by cumulative bytes."""
    if cap_mb is None or not parameter_bytes:
        return list(zip(reference.bucket_bytes, reference.bucket_ready, strict=False))
    sizes = layout(parameter_bytes, cap_mb)
    total = sum(sizes)
    ends = list(itertools.accumulate(sizes))
    xs, ys, running = [0.0], [0.0], 0
    for nbytes, ready in zip(reference.bucket_bytes, reference.bucket_ready, strict=False):
        running += nbytes
        xs.append(running * total / max(1, sum(reference.bucket_bytes)))
        ys.append(max(ready, ys[-1]))
    return [(s, _interpolate(xs, ys, e)) for s, e in zip(sizes, ends, strict=False)]


def _interpolate(xs: list[float], ys: list[float], x: float) -> float:
    for (x0, y0), (x1, y1) in zip(zip(xs, ys, strict=False), zip(xs[1:], ys[1:], strict=False), strict=False):
        if x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


def simulate_step(
    reference: StepProfile, compute: ComputeModel, link: LinkModel, ranks: int, buckets: list[tuple[int, float]]
) -> tuple[float, float]:
    """(step ms, exposed communication ms) at `ranks`, compute scaled from the reference profile."""
    scale = compute.at(ranks) / reference.compute_ms if reference.compute_ms > 0 else 1.0
    backward = reference.backward_ms * scale
    done = 0.0
    for nbytes, ready in buckets:
        done = max(done, ready * backward) + link.allreduce_us(nbytes, ranks) / 1000
    exposed = max(0.0, done - backward)
    return compute.at(ranks) + exposed, exposed
