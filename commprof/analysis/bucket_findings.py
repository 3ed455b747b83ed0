"""Detectors of the findings the bucket model predicts (analysis/predict.py, docs/prediction.md): the bucket_cap_mb
whose buckets the measured steps would run fastest with, and all-reduces far below the link's bandwidth.

Each profiled step's backward, buckets and ready times are re-run through the model of `commprof scale` on the link
the run timed alone (or, for others' traces, fitted to the all-reduces that ran alone), the buckets re-made as DDP
makes them for the candidate setting (kinds/ddp_buckets.py). The gain is the model's step now minus the model's
step then, so the model's own bias cancels. On CPU ranks every all-reduce counts in full (docs/semantics.md,
"Claims")."""

from __future__ import annotations

import dataclasses
import random
import statistics

from commprof.analysis.evidence import Evidence, current_cap, current_options
from commprof.analysis.predict import (
    CANDIDATE_CAPS_MB,
    ComputeModel,
    LinkModel,
    StepProfile,
    rebucket,
    run_link,
    simulate_step,
)
from commprof.errors import UsageError
from commprof.kinds import DDP
from commprof.kinds.ddp_buckets import distinct_caps, layout
from commprof.results.common import Estimate
from commprof.results.finding_facts import BucketCap, Link, LinkSource, SlowCollectives
from commprof.results.job import BuiltDDP
from commprof.results.report import Finding, ModelAccount
from commprof.results.run_record import ProbedSize

RESAMPLES = 400
SLOW_BELOW = 0.5  # an all-reduce below this share of the link's bandwidth is slow


def bucket_cap(evidence: Evidence) -> list[Finding]:
    """The cap whose buckets the model predicts fastest, among one cap per bucket layout DDP would build; for a
    script with several DDP models, each model's own cap, from its own all-reduces."""
    ddps = [model for model in evidence.report.models if model.kind == "DDP"]
    run = evidence.report.run
    if len(ddps) == 1 and run is not None and len(run.job.built) > 1:  # a DDP beside another kind's models: named
        return _bucket_cap(evidence, evidence.samples_of(DDP), ddps[0])
    own = {model.name: evidence.model_samples(model.name) for model in ddps} if len(ddps) > 1 else {}
    if not own or not all(own.values()) or any(m.shared_calls_per_step for m in ddps):
        # one model, or models whose sizes are not told apart
        return _bucket_cap(evidence, evidence.samples_of(DDP), None)
    return [f for model in ddps for f in _bucket_cap(evidence, own[model.name], model)]


def _bucket_cap(evidence: Evidence, samples: list[StepProfile], model: ModelAccount | None) -> list[Finding]:
    report, link, probe, serial = evidence.report, evidence.link_of(DDP), evidence.probe, evidence.serial
    if link is None or not samples:
        return []
    name = model.name if model else None
    options, framework = current_options(report, name)
    built = next((b for b in report.run.job.of(BuiltDDP) if b.label == name), None) if report.run and name else None
    parameters = built.parameter_sizes if built else report.run.parameter_sizes if report.run else None
    exposed = statistics.median(s.exposed_ms for s in samples)
    # without the parameters' sizes (someone else's traces), the measured buckets are the units: merged, never split
    units = parameters or list(reversed(samples[0].bucket_bytes))
    cap_now = current_cap(report, name)
    now = layout(parameters, cap_now) if parameters else tuple(samples[0].bucket_bytes)
    candidates = distinct_caps(units, CANDIDATE_CAPS_MB, now)  # one cap per layout DDP would build; not today's
    # the parameters' buckets are float32; a compression hook all-reduces them in 16 bits, as the trace measured
    shrink = 2 if parameters and options.comm_hook != "none" else 1

    def on_wire(sample: StepProfile, cap: float) -> list[tuple[int, float]]:
        return [(b // shrink, r) for b, r in rebucket(sample, units, cap)]

    by_cap = {cap: model_gain(samples, link, lambda s, cap=cap: on_wire(s, cap), serial=serial) for cap in candidates}
    if not by_cap:
        return []
    best = max(by_cap, key=lambda c: (round(by_cap[c], 6), c))
    best_gain = gain_ci(samples, lambda s: on_wire(s, best), serial=serial, probe=probe)
    # the caps whose gain is inside the best one's interval are as good, as far as the steps can tell: the
    # largest of them (fewest calls) is named, so that a rerun's noise does not flip the advice between them
    cap = max(c for c, g in by_cap.items() if g >= best_gain.low)
    gain = best_gain if cap == best else gain_ci(samples, lambda s: on_wire(s, cap), serial=serial, probe=probe)
    as_good = sorted(c for c, g in by_cap.items() if g >= best_gain.low and c != cap)
    facts = BucketCap(
        cap_mb=cap,
        buckets_then=list(candidates[cap]),
        buckets_now=list(now),
        cap_now=cap_now,
        exposed_ms=exposed,
        link=Link(link.bandwidth_gbps, link.alpha_us, link.source),
        serial=serial,
        as_good=as_good,
        options=dataclasses.replace(options, bucket_cap_mb=cap, ddp_model=name),
        framework=framework,
        model=name,
    )
    setting = {"bucket_cap_mb": cap, **({"ddp_model": name} if name else {})}
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain, setting=setting, model=name)]


def slow_collectives(evidence: Evidence) -> list[Finding]:
    """All-reduces far below the bandwidth the link reaches with large messages (`commprof bench` on this host, or
    the fitted B). The gain: the model's step now against the same buckets at that bandwidth, so a slow
    all-reduce hidden under the backward gains nothing. Small buckets are the usual cause: latency dominates."""
    report, samples, link, serial = evidence.report, evidence.samples_of(DDP), evidence.link_of(DDP), evidence.serial
    if link is None:
        return []
    gradient_bytes = sum(samples[0].bucket_bytes)
    top, source = evidence.ceiling or (link.bandwidth_gbps, link.source)
    slow = [
        c
        for c in report.collectives
        if c.op == "all_reduce" and c.bytes and c.busbw_gbps is not None and c.busbw_gbps < SLOW_BELOW * top
    ]
    if not slow:
        return []
    gain = gain_ci(
        samples,
        lambda s: rebucket(s, None, None),
        no_latency=top,
        serial=serial,
        probe=evidence.probe,
    )
    ranks = samples[0].world_size
    reach_bytes = 4 * link.alpha_us * link.bandwidth_gbps * 1e3 * ranks  # bus bytes >= 4 x latency x B: 80% of B
    facts = SlowCollectives(
        sizes=[(c.bytes or 0, c.busbw_gbps or 0.0) for c in slow],
        top_gbps=top,
        top=source,
        alpha_us=link.alpha_us,
        reach_bytes=reach_bytes,
        gradient_bytes=gradient_bytes,
    )
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain)]


def _pairs(samples: list[StepProfile], make_buckets, serial: bool) -> list[tuple[list, list]]:
    """Per sample, its buckets now and with the candidate's setting; `serial`: none of them overlaps the backward
    (each ready when it ends)."""
    pairs = [(rebucket(s, None, None), make_buckets(s)) for s in samples]
    if serial:
        pairs = [([(b, 1.0) for b, _ in now], [(b, 1.0) for b, _ in then]) for now, then in pairs]
    return pairs


def model_gain(
    samples: list[StepProfile], link: LinkModel, make_buckets, no_latency: float | None = None, serial: bool = False
) -> float:
    """The median over the samples of the model's step now minus its step with the candidate's buckets (and,
    with `no_latency` (GB/s), every all-reduce at that bandwidth with no latency)."""
    return _median_gain(samples, _pairs(samples, make_buckets, serial), link, no_latency)


def _median_gain(
    samples: list[StepProfile], buckets: list[tuple[list, list]], link: LinkModel, no_latency: float | None
) -> float:
    return statistics.median(_gains(samples, buckets, link, no_latency))


def _gains(
    samples: list[StepProfile], buckets: list[tuple[list, list]], link: LinkModel, no_latency: float | None
) -> list[float]:
    then_link = LinkModel(0.0, no_latency, LinkSource("what-if")) if no_latency else link
    gains = []
    for sample, (now_buckets, then_buckets) in zip(samples, buckets, strict=False):
        flat = ComputeModel(sample.compute_ms, 0.0)
        now, _ = simulate_step(sample, flat, link, sample.world_size, now_buckets)
        then, _ = simulate_step(sample, flat, then_link, sample.world_size, then_buckets)
        gains.append(now - then)
    return gains


def gain_ci(
    samples: list[StepProfile],
    make_buckets,
    no_latency: float | None = None,
    serial: bool = False,
    probe: list[ProbedSize] | None = None,
) -> Estimate:
    """The predicted gain with a 95% bootstrap interval: each resample of the profiled steps refits the link too (from
    a resample of the run's link probe, or of the steps' own all-reduces), so the interval carries the uncertainty of
    the link as well as the steps' spread."""
    buckets = _pairs(samples, make_buckets, serial)  # once: resamples reuse them
    rng = random.Random(0)

    boots = []
    for _ in range(RESAMPLES):
        chosen = rng.choices(range(len(samples)), k=len(samples))
        try:
            link = run_link([samples[i] for i in chosen], probe or [], rng)
        except UsageError:
            continue
        drawn = sorted(set(chosen))  # a step drawn twice is simulated once
        gains = _gains([samples[i] for i in drawn], [buckets[i] for i in drawn], link, no_latency)
        gain_of = dict(zip(drawn, gains, strict=True))
        boots.append(statistics.median(gain_of[i] for i in chosen))
    boots.sort()
    tail = int(0.025 * len(boots))
    return Estimate(
        _median_gain(samples, buckets, run_link(samples, probe or []), no_latency), boots[tail], boots[-1 - tail]
    )
