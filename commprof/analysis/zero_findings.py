"""The finding the bucket model predicts for a DeepSpeed run: the ZeRO reduce_bucket_size whose gradient reductions
the measured steps would run fastest with (DDP's, analysis/bucket_findings.py).

The buckets are the run's own gradient reductions (evidence.samples_of(DEEPSPEED)), merged as ZeRO fills a bucket: whole
gradients until the next would exceed the size, so a larger size merges the measured buckets and never splits one
(the parameters' sizes are not recorded for ZeRO). Sizes below the run's own are not predicted. The link, the model,
its interval and the rule that a gain is claimed only beyond the noise are DDP's."""

from __future__ import annotations

import statistics

from commprof.analysis.bucket_findings import gain_ci, model_gain
from commprof.analysis.evidence import Evidence
from commprof.kinds import DEEPSPEED
from commprof.results.finding_facts import Link, ZeroBuckets
from commprof.results.job import BuiltDeepSpeed
from commprof.results.report import Finding
from commprof.settings import ZERO_BUCKET_GRID
from commprof.trace.rules import ZERO_PURPOSE, dtype_size


def merged(buckets: list[tuple[int, float]], limit_bytes: float) -> list[tuple[int, float]]:
    """(bytes, ready fraction) per bucket once ZeRO fills buckets of `limit_bytes` from the measured ones in the order
    they were reduced: a bucket is reduced when the next would not fit, ready when its last part was."""
    out: list[tuple[int, float]] = []
    size, ready = 0, 0.0
    for nbytes, at in buckets:
        if size and size + nbytes > limit_bytes:
            out.append((size, ready))
            size = 0
        size, ready = size + nbytes, at
    return [*out, (size, ready)] if size else out


def zero_bucket_size(evidence: Evidence) -> list[Finding]:
    """The reduce_bucket_size the model predicts fastest, among the sizes above the run's own that merge its
    gradient reductions into fewer buckets."""
    samples, link, run = evidence.samples_of(DEEPSPEED), evidence.link_of(DEEPSPEED), evidence.report.run
    if link is None or run is None:
        return []
    engine = run.job.of(BuiltDeepSpeed)[0]
    own = engine.settings.get("reduce_bucket_size")
    element = _gradient_element_bytes(evidence)
    if own is None or element is None:
        return []
    now = list(zip(samples[0].bucket_bytes, samples[0].bucket_ready, strict=True))
    layouts: dict[tuple[int, ...], float] = {}
    for size in ZERO_BUCKET_GRID:
        built = tuple(b for b, _ in merged(now, size * element))
        if size > own and len(built) < len(now) and built not in layouts:
            layouts[built] = size
    if not layouts:
        return []
    serial = evidence.serial

    def buckets_of(size: float):
        return lambda s: merged(list(zip(s.bucket_bytes, s.bucket_ready, strict=True)), size * element)

    by_size = {size: model_gain(samples, link, buckets_of(size), serial=serial) for size in layouts.values()}
    best = max(by_size, key=lambda size: (round(by_size[size], 6), -size))  # the smaller buffer when equal
    gain = gain_ci(samples, buckets_of(best), serial=serial, probe=evidence.probe)
    facts = ZeroBuckets(
        size=best,
        own=own,
        calls_now=len(now),
        calls_then=len(merged(now, best * element)),
        stage=engine.zero_stage,
        exposed_ms=statistics.median(s.exposed_ms for s in samples),
        link=Link(link.bandwidth_gbps, link.alpha_us, link.source),
        serial=serial,
    )
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain, setting={"reduce_bucket_size": best})]


def _gradient_element_bytes(evidence: Evidence) -> int | None:
    """The bytes of one gradient element as the run reduced them (its gradient reductions' dtype)."""
    reduction = ZERO_PURPOSE[("backward", "all_reduce")]
    sizes = {dtype_size(c.dtype) for c in evidence.report.collectives if c.purpose == reduction}
    return sizes.pop() if len(sizes) == 1 else None
