"""The findings decided by measurement, not by rule: gradient compression, gradient accumulation, a larger batch.

Compression (docs/semantics.md, "Compression, by measurement"): the gain is the model's step now minus its step with
every bucket's bytes halved on the link the halved bytes were measured on (the run's 16-bit all-reduces, timed alone
after training by instrument/cast_probe; the float32 link where there are none), MINUS what the casts cost per step
on this rank's device (each bucket cast to 16 bits with the hook's divide, and back: the fastest of the probe's
repeats, interpolated to the bucket's bytes). Both hooks are weighed where torch registers both (bf16's only over
NCCL: DistributedDataParallel.register_comm_hook refuses it elsewhere, by its name); the one that gains more is
named. Without the casts' measurement (traces from elsewhere, an older run) the gain is the halved bytes' alone, an
upper bound, and is never claimed.

Accumulation and batch: the gradient all-reduce is paid once per optimizer step. Accumulating k micro-batches under
no_sync (the DDP paper's skipped synchronizations) pays the step's communication (on CPU ranks every all-reduce in
full on the link, the model's convention there; on GPUs the exposed part the trace measured) once per k
micro-batches; a k times larger per-rank batch pays it once per k times the samples (and, on GPUs, hides more of
it under a k times longer backward). The proposal multiplies today's micro-batches (commprof's --grad-accum, or
the accumulation the trace counts in a script's steps) by 4, and the batch by 2. Their gain is per today's step of
samples (so the one rule of analysis/stats.py applies as to any other finding), and per sample where the run's
batch is known; neither is a setting `commprof advise` can measure
(its sweep compares step times, and these change the samples in a step)."""

from __future__ import annotations

import dataclasses
import random
import statistics
from typing import Callable

from commprof.analysis.evidence import Evidence
from commprof.analysis.predict import (
    ComputeModel,
    LinkModel,
    StepProfile,
    probed_link,
    rebucket,
    run_link,
    simulate_step,
)
from commprof.analysis.stats import median_ci, rerun_interval
from commprof.errors import UsageError
from commprof.kinds import DDP
from commprof.results.common import Estimate
from commprof.results.finding_facts import Accumulation, Compression, LargerBatch
from commprof.results.report import Finding, Report
from commprof.results.run_record import CastCost, ProbedSize

RESAMPLES = 400
HOOKS = {"fp16": "float16", "bf16": "bfloat16"}
ACCUMULATE = 4  # micro-batches per optimizer step, proposed
LARGER_BATCH = 2  # times today's per-rank batch, proposed
Buckets = list[tuple[int, float]]
PerStep = Callable[[StepProfile], float]
# a finding's value per step, for one draw of the steps and the link (its own measurements drawn with the rng)
Value = Callable[[list[StepProfile], LinkModel, "random.Random | None"], PerStep]


def _buckets(sample: StepProfile, serial: bool, halve: bool = False) -> Buckets:
    """The sample's buckets as measured (bytes halved: compressed); `serial`: each ready when the backward ends."""
    return [(b // 2 if halve else b, 1.0 if serial else r) for b, r in rebucket(sample, None, None)]


def _step(sample: StepProfile, link: LinkModel, buckets: Buckets, scale: float = 1.0) -> float:
    return simulate_step(sample, ComputeModel(sample.compute_ms * scale, 0.0), link, sample.world_size, buckets)[0]


def _bootstrap(samples: list[StepProfile], probe: list[ProbedSize], value: Value) -> Estimate:
    """`value` on every profiled step with the link as probed (or fitted), and a 95% bootstrap interval in which each
    resample of the steps also refits the link from a resample of the probe's repeats (value's own measurements it
    resamples itself, with the rng it is given)."""
    rng = random.Random(0)

    boots = []
    for _ in range(RESAMPLES):
        picked = rng.choices(samples, k=len(samples))
        try:
            boots.append(_median(value, picked, run_link(picked, probe or [], rng), rng))
        except UsageError:
            continue
    boots.sort()
    tail = int(0.025 * len(boots))
    point = _median(value, samples, run_link(samples, probe or []))
    return Estimate(point, boots[tail], boots[-1 - tail]) if boots else Estimate(point, point, point)


def _median(value: Value, picked: list[StepProfile], link: LinkModel, rng: random.Random | None = None) -> float:
    """The median of `value` over the picked steps; a step drawn twice is simulated once."""
    per_step = value(picked, link, rng)
    of: dict[int, float] = {}
    for s in picked:
        if id(s) not in of:
            of[id(s)] = per_step(s)
    return statistics.median(of[id(s)] for s in picked)


def cast_us(costs: list[CastCost], nbytes: int) -> float:
    """One cast of a float32 bucket of `nbytes` to the 16-bit dtype and back (the hook's work on it), in us: the
    fastest repeat at each measured size, interpolated between sizes, in proportion beyond the largest."""
    return _interpolated(_cast_points(costs), nbytes)


def _cast_points(costs: list[CastCost], rng: random.Random | None = None) -> list[tuple[int, float]]:
    """(bytes, us) of each measured size's fastest repeat; `rng`: the repeats resampled first, once for all the
    buckets a bootstrap replicate casts."""
    return sorted((c.bytes, min(rng.choices(c.us, k=len(c.us)) if rng else c.us)) for c in costs if c.us)


def _interpolated(points: list[tuple[int, float]], nbytes: int) -> float:
    if nbytes <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if nbytes <= x1:
            return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)
    return points[-1][1] * nbytes / points[-1][0]


def _halved_link(costs: list[CastCost], ranks: int, link: LinkModel, rng: random.Random | None) -> LinkModel:
    """The link the 16-bit bytes travel, from their own all-reduces (a CPU backend sums them on the host); the
    float32 link where they were not timed."""
    probe = [ProbedSize(c.bytes // 2, c.allreduce_us) for c in costs if c.allreduce_us]
    if len({p.bytes for p in probe}) < 2:
        return link
    return probed_link(probe, ranks, (lambda t: rng.choices(t, k=len(t))) if rng else None)


def _compression_gain(costs: list[CastCost], serial: bool) -> Value:
    def value(picked: list[StepProfile], link: LinkModel, rng: random.Random | None) -> PerStep:
        halved = _halved_link(costs, picked[0].world_size, link, rng)
        points = _cast_points(costs, rng) if costs else []
        casts_ms: dict[tuple[int, ...], float] = {}  # per bucket layout (every step's, as a rule)

        def gain(s: StepProfile) -> float:
            buckets = _buckets(s, serial)
            sizes = tuple(b for b, _ in buckets)
            if sizes not in casts_ms:
                casts_ms[sizes] = sum(_interpolated(points, b) for b in sizes) / 1000 if points else 0.0
            return _step(s, link, buckets) - _step(s, halved, _buckets(s, serial, True)) - casts_ms[sizes]

        return gain

    return value


def compression(evidence: Evidence) -> list[Finding]:
    """fp16 or bf16 compression where the halved bytes save more on this link than the casts cost on this device
    (a net loss is no finding at all; a net gain within the noise is one, unclaimed)."""
    report, samples, link = evidence.report, evidence.samples_of(DDP), evidence.link_of(DDP)
    probe, serial = evidence.probe, evidence.serial
    options, framework = evidence.options
    if link is None or options.comm_hook != "none":
        return []
    measured = report.run.cast_costs if report.run else []
    registers = _registers(report)
    by_hook = {hook: [c for c in measured if c.dtype == dtype] for hook, dtype in HOOKS.items() if hook in registers}
    if measured:
        points = {
            hook: _median(_compression_gain(costs, serial), samples, link) for hook, costs in by_hook.items() if costs
        }
        if not points:
            return []
        hook = max(points, key=lambda h: (round(points[h], 6), h == "fp16"))
    else:
        hook = "fp16"
    costs = by_hook.get(hook, [])
    gain = _bootstrap(samples, probe, _compression_gain(costs, serial))
    if gain.value <= 0:
        return []
    sample = samples[0]
    buckets = _buckets(sample, serial)
    halved = _halved_link(costs, sample.world_size, link, None)
    saved = statistics.median(
        _step(s, link, _buckets(s, serial)) - _step(s, halved, _buckets(s, serial, True)) for s in samples
    )
    largest = max(b for b, _ in buckets)
    facts = Compression(
        hook=hook,
        dtype=HOOKS[hook],
        casts_measured=bool(costs),
        saved_ms=saved,
        float_gbps=link.bandwidth_gbps,
        halved_gbps=halved.bandwidth_gbps if halved is not link else None,
        options=dataclasses.replace(options, comm_hook=hook),
        framework=framework,
    )
    if costs:
        facts = dataclasses.replace(
            facts,
            largest_bytes=largest,
            largest_cast_us=cast_us(costs, largest),
            casts_ms=sum(cast_us(costs, b) for b, _ in buckets) / 1000,
            buckets=len(buckets),
            net_ms=gain.value,
            others={
                other: _median(_compression_gain(c, serial), samples, link)
                for other, c in by_hook.items()
                if other != hook and c
            },
            bf16_weighed="bf16" in registers,
        )
    else:  # an upper bound: never claimed
        gain = Estimate(gain.value, min(gain.low, 0.0), gain.high)
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain, setting={"comm_hook": hook})]


# accumulation and a larger batch change the optimisation (a larger global batch): advised only where the step pays
# communication for this share of its time or more (in the interval a rerun's share falls in: the quick start's share
# was 24% to 34% in five launches, and a bound read on one launch's median flipped the advice between them)
COMMUNICATION_BOUND = 0.25


def _registers(report: Report) -> set[str]:
    """The hooks torch lets this job register: bf16's only where every gradient all-reduce runs over NCCL (RCCL)."""
    backends = {c.backend for c in report.collectives if c.op == "all_reduce"}
    if report.run:
        backends = {report.run.config.backend}
    return set(HOOKS) if backends == {"nccl"} else {"fp16"}


def _exposed_gain(serial: bool, factor: int, batch: bool) -> Value:
    """Per today's step of samples: what accumulating `factor` micro-batches (or a `factor` times larger batch)
    saves of the step's communication."""

    def value(picked: list[StepProfile], link: LinkModel, rng: random.Random | None) -> PerStep:
        def gain(s: StepProfile) -> float:
            if batch:
                return _step(s, link, _buckets(s, serial)) - _step(s, link, _buckets(s, serial), factor) / factor
            return _paid(s, link, serial) * (1 - 1 / factor)

        return gain

    return value


def communication_share(report: Report, samples: list[StepProfile], serial: bool) -> Estimate:
    """The share of its step each profiled step spends in communication as the trace measured it: on CPU ranks all of
    it, each rank's each step (the model's paid time rests on the link probed after training, which moved 1.07 to
    2.05 GB/s between five launches of the quick start, where the measured share moved 33% to 41%); on GPUs the
    exposed part (each sample's). The median, and the interval a rerun's median falls in (analysis/stats.median_ci,
    widened for a rerun)."""
    if serial:
        shares = [s.comm_ms / s.window_ms for s in report.steps if s.window_ms > 0]
    else:
        shares = [s.exposed_ms / (s.compute_ms + s.exposed_ms) for s in samples if s.compute_ms + s.exposed_ms > 0]
    return rerun_interval(median_ci(shares)) if shares else Estimate(0.0, 0.0, 0.0)


def _paid(sample: StepProfile, link: LinkModel, serial: bool) -> float:
    """The communication a step pays: on CPU ranks every all-reduce in full on the link (the model's convention);
    on GPUs the exposed part as the trace measured it."""
    return _step(sample, link, _buckets(sample, serial)) - sample.compute_ms if serial else sample.exposed_ms


def accumulation(evidence: Evidence) -> list[Finding]:
    """Accumulation under no_sync and a larger per-rank batch, each where it saves communication per sample."""
    report, samples, link = evidence.report, evidence.samples_of(DDP), evidence.link_of(DDP)
    probe, serial = evidence.probe, evidence.serial
    if link is None:
        return []
    options, framework = evidence.options
    run = report.run
    micro = max(options.grad_accum, report.micro_steps or 1)  # a script's own accumulation, as the trace counts it
    per_step = run.config.batch_size * micro if run and not run.script else None
    exposed = statistics.median(_paid(s, link, serial) for s in samples)
    share = communication_share(report, samples, serial)
    if exposed <= 0 or share.high < COMMUNICATION_BOUND:  # below the bound, a rerun too
        return []
    found = []
    for factor, batch in ((ACCUMULATE, False), (LARGER_BATCH, True)):
        gain = _bootstrap(samples, probe, _exposed_gain(serial, factor, batch))
        if gain.value <= 0:
            continue
        facts = (LargerBatch if batch else Accumulation)(
            factor=factor,
            micro_batches=micro * factor,
            paid_ms=exposed,
            share=share.value,
            share_low=share.low,
            share_high=share.high,
            bound=COMMUNICATION_BOUND,
            near_bound=share.low < COMMUNICATION_BOUND,
            serial=serial,
            samples_per_step=per_step,
            batch_size=run.config.batch_size if per_step and run else None,
            options=dataclasses.replace(options, grad_accum=micro * factor),
            framework=framework,
        )
        found.append(Finding(kind=facts.KIND, facts=facts, gain_ms=gain))
    return found
