"""Findings: what to change, with the gain the measured step predicts, ranked; none on noise.

Each finding's gain is a median over the profiled steps (of every analysed rank) with a 95% bootstrap
interval, and fires only when that interval excludes zero and the gain is at least 3% of the step (the one rule
of analysis/stats.py). Settings (bucket_cap_mb; gradient compression, accumulation and batch in
analysis/setting_findings.py, weighed against what the run measured) are predicted by re-running the measured
step through the bucket model of `commprof scale` (analysis/predict.py, docs/prediction.md): each profiled step's
backward, buckets and ready times, the link the run timed alone (or, for others' traces, fitted to the all-reduces
that ran alone), the buckets re-made as DDP makes them for the candidate setting (analysis/ddp_buckets.py). The
gain is the model's step now minus the model's step then, so the model's own bias cancels. On CPU ranks every
all-reduce counts in full (docs/semantics.md, "Claims")."""

from __future__ import annotations

import dataclasses
import random
import statistics
from typing import cast

from commprof.analysis.crossrank import Matching
from commprof.analysis.ddp_buckets import DEFAULT_CAP_MB, cap_label, describe, distinct_caps, layout
from commprof.analysis.distortion import large_slowdown
from commprof.analysis.predict import (
    CANDIDATE_CAPS_MB,
    MB,
    ComputeModel,
    LinkModel,
    StepProfile,
    fit_link,
    probed_link,
    rebucket,
    run_link,
    simulate_step,
    step_profile,
)
from commprof.analysis.rank_findings import input_stalls, stalls_now_and_then, straggler
from commprof.analysis.setting_findings import accumulation, compression
from commprof.analysis.stats import real_gain, rerun_interval
from commprof.analysis.sweep import paste_line
from commprof.config import DDPOptions
from commprof.errors import UsageError
from commprof.results.common import Estimate
from commprof.results.report import Finding, JobStep, Report
from commprof.results.run_record import ProbedSize
from commprof.trace.model import RankTrace, RunTrace, Step

MAX_MODELLED_RANKS = 8  # the bucket model reads the buckets of this many ranks (they all run the same ones)
RESAMPLES = 400
SLOW_BELOW = 0.5  # an all-reduce below this share of the link's bandwidth is slow
# measured with `commprof advise` (docs/benchmarks.md): on CPU ranks the exposed time fell as the overlap model
# predicted and the step did not (Gloo's threads run on the cores the backward uses), so there the model counts every
# all-reduce in full, hidden or not: what a setting can save is calls (latency) and bytes, not overlap
SERIAL_NOTE = (
    "; on CPU ranks communication takes the backward's cores whether or not it overlaps it, so the model "
    "counts every all-reduce in full: the gain is what fewer calls save"
)


def findings(
    report: Report,
    windows: list[tuple[RankTrace, list[Step]]],
    matching: Matching | None,
    job: JobStep | None,
    ceiling: tuple[float, str] | None = None,
    drift_ms: float = 0.0,
    waits: dict[int, dict[int, float]] | None = None,
) -> tuple[list[Finding], list[Finding]]:
    """The claims (ranked, the profiler's distortion last) and the findings whose gain is within the noise (ranked),
    each with the interval a rerun's gain falls in. `ceiling`: the all-reduce bus bandwidth `commprof bench`
    measured on this host (GB/s, which bench); without it, the link fitted to the run's own all-reduces is the
    ceiling. `drift_ms`: how far the job's unprofiled step
    moved within the launch (analysis/distortion.job_drift_ms); every gain's interval is widened by it. `waits`: what
    each rank made the others wait at each step of the whole run (analysis/whole_run.waits_caused)."""
    step_ms = statistics.median(r.step_time_ms.median for r in report.ranks)
    found = [
        *_settings(report, windows, step_ms, ceiling),
        *input_stalls(report, step_ms),
        *straggler(report, windows, matching, step_ms, waits),
        *stalls_now_and_then(report.whole_run, waits or {}),
    ]
    job_ms = job.unprofiled_ms if job else step_ms
    weighed = [_weighed(f, job_ms, drift_ms) for f in found if f.gain_ms is not None]
    weighed.sort(key=lambda f: -(f.gain_ms.value if f.gain_ms else 0.0))
    claims = [f for f in weighed if f.gain_ms and real_gain(f.gain_ms, job_ms)]
    return claims + _distortion(job), [f for f in weighed if f not in claims]


def _weighed(finding: Finding, job_ms: float, drift_ms: float) -> Finding:
    """The finding with the interval a rerun's gain falls in, widened by the job's own drift, and its gain a share of
    the job's step without the profiler (else of the profiled step)."""
    gain = rerun_interval(cast(Estimate, finding.gain_ms))
    widened = Estimate(gain.value, gain.low - drift_ms, gain.high + drift_ms)
    return dataclasses.replace(finding, gain_ms=widened, gain_pct=widened.value / job_ms * 100)


def _significant(finding: Finding, step_ms: float) -> bool:
    return finding.gain_ms is not None and real_gain(finding.gain_ms, step_ms)


def _trained_with_ddp(report: Report) -> bool:
    """DDP's settings are advice only for a run that trained with DDP (unknown for someone else's traces: yes)."""
    run = report.run
    if run is None:
        return True
    return run.config.strategy == "ddp" and (not run.script or bool(run.ddp_built))


def current_options(report: Report) -> tuple[DDPOptions, str]:
    """The DDP options the run trained with, and who built its DDP. A script's own DDP arguments (what it asked
    for, with what commprof applied on top) win over commprof's options, which it only applies when given."""
    run = report.run
    options = run.config.ddp if run else DDPOptions()
    built = run.ddp_built[0] if run and run.script and run.ddp_built else None
    if built is None:
        return options, "script"
    known = {f.name for f in dataclasses.fields(DDPOptions)}
    given = {k: v for k, v in {**built.asked, **built.applied}.items() if k in known and v is not None}
    return dataclasses.replace(options, **given), built.built_by


def current_cap(report: Report) -> float | None:
    """The bucket_cap_mb DDP was built with; None when nobody gave one (DDP's default, with its 1 MB first bucket).
    commprof's built-in runs always pass theirs; a script's is what it asked for, or what commprof applied."""
    run = report.run
    if run is None:
        return DEFAULT_CAP_MB
    if not run.script:
        return run.config.ddp.bucket_cap_mb
    built = run.ddp_built[0] if run.ddp_built else None
    given = (built.applied.get("bucket_cap_mb") or built.asked.get("bucket_cap_mb")) if built else None
    return float(given) if given is not None else None


def _samples(windows: list[tuple[RankTrace, list[Step]]]) -> list[StepProfile]:
    """One measured step profile per profiled step of the first ranks (steps without a DDP backward skipped)."""
    samples = []
    for rank, _ in windows[:MAX_MODELLED_RANKS]:
        for index, step in enumerate(rank.steps):
            one = dataclasses.replace(
                rank,
                steps=(step,),
                backward_starts=rank.backward_starts[index : index + 1],
                backward_ends=rank.backward_ends[index : index + 1],
            )
            try:
                sample = step_profile(RunTrace((one,)))
            except UsageError:
                continue
            if sample.bucket_bytes:
                samples.append(dataclasses.replace(sample, world_size=rank.world_size or len(windows)))
    return samples


def _pairs(samples: list[StepProfile], make_buckets, serial: bool) -> list[tuple[list, list]]:
    """Per sample, its buckets now and with the candidate's setting; `serial`: none of them overlaps the backward
    (each ready when it ends)."""
    pairs = [(rebucket(s, None, None), make_buckets(s)) for s in samples]
    if serial:
        pairs = [([(b, 1.0) for b, _ in now], [(b, 1.0) for b, _ in then]) for now, then in pairs]
    return pairs


def _model_gain(
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
    then_link = LinkModel(0.0, no_latency, "no latency") if no_latency else link
    gains = []
    for sample, (now_buckets, then_buckets) in zip(samples, buckets, strict=False):
        flat = ComputeModel(sample.compute_ms, 0.0)
        now, _ = simulate_step(sample, flat, link, sample.world_size, now_buckets)
        then, _ = simulate_step(sample, flat, then_link, sample.world_size, then_buckets)
        gains.append(now - then)
    return gains


def _gain_ci(
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


def _settings(report: Report, windows, step_ms: float, ceiling: tuple[float, str] | None) -> list[Finding]:
    if not _trained_with_ddp(report):
        return []
    samples = _samples(windows)
    if len(samples) < 2 or samples[0].world_size < 2:
        return []
    probe = report.run.link_probe if report.run else []  # commprof's own runs time the link alone after training
    try:
        link = probed_link(probe, samples[0].world_size) if probe else fit_link(samples)
    except UsageError:
        return []
    options, framework = current_options(report)
    parameters = report.run.parameter_sizes if report.run else None
    exposed = statistics.median(s.exposed_ms for s in samples)
    found = []
    total = sum(samples[0].bucket_bytes)
    # without the parameters' sizes (someone else's traces), the measured buckets are the units: merged, never split
    units = parameters or list(reversed(samples[0].bucket_bytes))
    now = layout(parameters, current_cap(report)) if parameters else tuple(samples[0].bucket_bytes)
    candidates = distinct_caps(units, CANDIDATE_CAPS_MB, now)  # one cap per layout DDP would build; not today's
    serial = windows[0][0].kind == "cpu"
    # the parameters' buckets are float32; a compression hook all-reduces them in 16 bits, as the trace measured
    shrink = 2 if parameters and options.comm_hook != "none" else 1

    def on_wire(sample: StepProfile, cap: float) -> list[tuple[int, float]]:
        return [(b // shrink, r) for b, r in rebucket(sample, units, cap)]

    by_cap = {cap: _model_gain(samples, link, lambda s, cap=cap: on_wire(s, cap), serial=serial) for cap in candidates}
    if by_cap:
        best = max(by_cap, key=lambda c: (round(by_cap[c], 6), c))
        best_gain = _gain_ci(samples, lambda s: on_wire(s, best), serial=serial, probe=probe)
        # the caps whose gain is inside the best one's interval are as good, as far as the steps can tell: the
        # largest of them (fewest calls) is named, so that a rerun's noise does not flip the advice between them
        cap = max(c for c, g in by_cap.items() if g >= best_gain.low)
        gain = best_gain if cap == best else _gain_ci(samples, lambda s: on_wire(s, cap), serial=serial, probe=probe)
        as_good = sorted(c for c, g in by_cap.items() if g >= best_gain.low and c != cap)
        then = candidates[cap]
        found.append(
            Finding(
                kind="bucket_cap",
                title=(
                    f"bucket_cap_mb={cap:g} ({describe(then)}) "
                    + ("saves all-reduce calls" if serial else "hides more of the gradient all-reduce")
                ),
                evidence=(
                    f"{exposed:.1f} ms of each step is exposed all-reduce after the backward pass; now "
                    f"{describe(now)} ({cap_label(current_cap(report))}); link {'measured' if probe else 'fitted'}: "
                    f"{link.bandwidth_gbps:.2f} GB/s, {link.alpha_us:.0f} us per ring step"
                    + (f" ({link.source})" if probe else "")
                    + (f"; as good within the interval: {', '.join(f'{c:g}' for c in as_good)}" if as_good else "")
                    + (SERIAL_NOTE if serial else "")
                ),
                action=paste_line(dataclasses.replace(options, bucket_cap_mb=cap), framework),
                gain_ms=gain,
                setting={"bucket_cap_mb": cap},
            )
        )
    # compression, accumulation and a larger batch: decided by what this run measured (analysis/setting_findings)
    found += compression(report, samples, link, probe, options, framework, serial)
    found += accumulation(report, samples, link, probe, options, framework, serial)
    slow = _slow_collectives(report, samples, link, step_ms, total, ceiling, serial)
    if slow and found and found[0].kind == "bucket_cap" and _significant(found[0], step_ms):  # one advice on buckets
        return [
            dataclasses.replace(found[0], evidence=f"{found[0].evidence}; slow all-reduces: {slow[0].evidence}"),
            *found[1:],
        ]
    return found + slow


def _slow_collectives(
    report: Report,
    samples: list[StepProfile],
    link: LinkModel,
    step_ms: float,
    gradient_bytes: int,
    ceiling: tuple[float, str] | None,
    serial: bool,
) -> list[Finding]:
    """All-reduces far below the bandwidth the link reaches with large messages (`commprof bench` on this host, or
    the fitted B). The gain: the model's step now against the same buckets at that bandwidth, so a slow
    all-reduce hidden under the backward gains nothing. Small buckets are the usual cause: latency dominates."""
    fitted = (
        f"the alpha-beta fit to the run's all-reduces, {link.alpha_us:.0f} us per ring step; their durations "
        "include any wait for late ranks"
    )
    top, source = ceiling or (link.bandwidth_gbps, link.source if report.run and report.run.link_probe else fitted)
    slow = [
        c
        for c in report.collectives
        if c.op == "all_reduce" and c.bytes and c.busbw_gbps is not None and c.busbw_gbps < SLOW_BELOW * top
    ]
    if not slow:
        return []
    gain = _gain_ci(
        samples,
        lambda s: rebucket(s, None, None),
        no_latency=top,
        serial=serial,
        probe=report.run.link_probe if report.run else [],
    )
    ranks = samples[0].world_size
    reach_bytes = 4 * link.alpha_us * link.bandwidth_gbps * 1e3 * ranks  # bus bytes >= 4 x latency x B: 80% of B
    sizes = ", ".join(f"{(c.bytes or 0) / MB:.2f} MiB at {c.busbw_gbps:.2f} GB/s" for c in slow)
    return [
        Finding(
            kind="slow_collectives",
            title=f"{len(slow)} all-reduce size(s) run far below the link's bandwidth",
            evidence=f"{sizes}, against {top:.2f} GB/s for large messages on this link ({source})",
            action=(
                f"fewer, larger messages: all-reduces of {reach_bytes / MB:.0f} MiB or more reach 80% of the link "
                "(a larger bucket_cap_mb; the remainder bucket DDP leaves stays small)"
                if reach_bytes < gradient_bytes
                else f"the link's latency: it needs {reach_bytes / MB:.0f} MiB messages to reach 80% of its bandwidth, "
                f"more than the {gradient_bytes / MB:.0f} MiB of gradients; a faster interconnect or fewer ranks "
                "per link"
            ),
            gain_ms=gain,
        )
    ]


def _distortion(job: JobStep | None) -> list[Finding]:
    slowdown = large_slowdown(job)
    if slowdown is None:
        return []
    return [
        Finding(
            kind="profiler_distortion",
            title=f"the profiler slowed the steps it recorded by {slowdown:.0%}",
            evidence="the job's median step inside the profiled window against its unprofiled steps in the same run, "
            "each its slowest rank's",
            action="commprof run ... --schedule WAIT,1,2  "
            "(a shorter active window; the breakdown and phases below describe slowed steps)",
        )
    ]
