"""The finding the bucket model predicts for a Horovod run: the fusion threshold that would run its measured steps
fastest (DDP's bucket model, analysis/bucket_findings.py, on the run's own allreduces).

Horovod's background thread wakes every HOROVOD_CYCLE_TIME, takes the tensors every rank has ready, and fuses them into
buffers of at most HOROVOD_FUSION_THRESHOLD bytes, sent one after another. The buckets are the run's own fused
allreduces, read from its timeline, each ready when its tensors' negotiation ended: the buffers a threshold split from
one cycle's tensors share that time, and a larger threshold merges them, in order, up to its size. Nothing else is
predicted: a longer cycle fuses no more (measured: docs/semantics.md, "Horovod"), and a smaller threshold would split
what the model only knows fused. The link, the model, its interval and the rule that a gain is claimed only beyond the
noise are DDP's."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from commprof.analysis.bucket_findings import SERIAL_NOTE, gain_ci, model_gain
from commprof.analysis.evidence import Evidence
from commprof.analysis.predict import StepProfile
from commprof.kinds import HOROVOD
from commprof.results.report import Finding
from commprof.settings import HOROVOD_FUSION_GRID_MB, MIB, HorovodOptions

Buckets = list[tuple[int, float]]


def fused(buckets: Buckets, limit: float) -> Buckets:
    """(bytes, ready fraction) per buffer once a threshold of `limit` bytes fuses, in order, the measured buffers of
    one cycle (those ready at the same time)."""
    out: Buckets = []
    for nbytes, ready in buckets:
        if out and out[-1][1] == ready and out[-1][0] + nbytes <= limit:
            out[-1] = (out[-1][0] + nbytes, ready)
        else:
            out.append((nbytes, ready))
    return out


def horovod_fusion(evidence: Evidence) -> list[Finding]:
    """The fusion threshold above the run's own that the model predicts fastest, among those that fuse its
    allreduces into fewer."""
    samples, link, run = evidence.horovod_samples, evidence.horovod_link, evidence.report.run
    if link is None or run is None:
        return []
    built = run.horovod_built[0]
    own = built.fusion_threshold_bytes

    def buckets_of(mb: float) -> Callable[[StepProfile], Buckets]:
        return lambda s: fused(list(zip(s.bucket_bytes, s.bucket_ready, strict=True)), mb * MIB)

    now = len(samples[0].bucket_bytes)
    fewer: dict[int, float] = {}
    for mb in (mb for mb in HOROVOD_FUSION_GRID_MB if mb * MIB > own):
        calls = len(buckets_of(mb)(samples[0]))
        if calls < now and calls not in fewer:
            fewer[calls] = mb
    if not fewer:
        return []
    serial = evidence.serial
    by_size = {mb: model_gain(samples, link, buckets_of(mb), serial=serial) for mb in fewer.values()}
    best = max(by_size, key=lambda mb: (round(by_size[mb], 6), -mb))  # the smaller buffer when equal
    gain = gain_ci(samples, buckets_of(best), serial=serial, probe=evidence.probe)
    calls = len(buckets_of(best)(samples[0]))
    exposed = statistics.median(s.exposed_ms for s in samples)
    return [
        Finding(
            kind="horovod_fusion",
            title=f"HOROVOD_FUSION_THRESHOLD of {best:g} MiB fuses the gradients into fewer allreduces ({now} a step, "
            f"then {calls})",
            evidence=(
                f"Horovod's {own / MIB:g} MiB fusion buffer split what its cycles had ready into {now} allreduces a "
                f"step; {exposed:.1f} ms of each step is exposed communication; link "
                f"{'measured' if evidence.probe else 'fitted'}: {link.bandwidth_gbps:.2f} GB/s, "
                f"{link.alpha_us:.0f} us per ring step" + (SERIAL_NOTE if serial else "")
            ),
            action=HOROVOD.paste(HorovodOptions(fusion_threshold_mb=best), baseline=HorovodOptions()),
            gain_ms=gain,
            setting={"fusion_threshold_mb": best},
        )
    ]
