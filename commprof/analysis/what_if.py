"""What the step would take on a faster or slower link between hosts, from the run's own traces and probe.

The bucket model of analysis/predict.py (each bucket's all-reduce starts when it is ready and the one before it is
done) with two tiers: an all-reduce whose group spans hosts runs at the slower of the link between hosts, scaled by
the factor asked, and the link within a host (unchanged; where it was not probed, not a limit); its latency per ring
step is the link between hosts' as probed (tc changes a rate, not a delay). The prediction is anchored on the
measured step: the measured median profiled step plus the model's change from the link as measured, so what the
model leaves out (Python between the steps, the optimizer) is kept as measured. Validated against runs at other
rates on the multi-host test bed: docs/prediction.md, "What-if links"."""

from __future__ import annotations

from collections.abc import Sequence

from commprof.analysis.predict import ComputeModel, LinkModel, StepProfile, rebucket, simulate_step, step_profile
from commprof.errors import UsageError
from commprof.results.finding_facts import LinkSource
from commprof.results.network import LinkTier, LinkWhatIf
from commprof.trace.model import RankTrace, RunTrace, Step

FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


def measured_profile(windows: Sequence[tuple[RankTrace, list[Step]]]) -> StepProfile | None:
    """The run's step as the bucket model sees it (medians over its ranks and profiled steps); None without DDP's
    gradient all-reduces."""
    try:
        profile = step_profile(RunTrace(tuple(rank for rank, _ in windows)))
    except UsageError:
        return None
    return profile if profile.bucket_bytes else None


def link_what_if(
    profile: StepProfile | None, tiers: list[LinkTier], factors: tuple[float, ...] = FACTORS
) -> list[LinkWhatIf]:
    """The predicted step per factor, or none where the job has no probed link between hosts or no DDP backward."""
    between = next((t for t in tiers if t.tier == "network"), None)
    if between is None or profile is None:
        return []
    within = next((t.bandwidth_gbps for t in tiers if t.tier == "host"), float("inf"))
    compute = ComputeModel(profile.compute_ms, 0.0)
    buckets = rebucket(profile, None, None)
    ranks = max(profile.world_size, len(between.ranks))

    def modelled(factor: float) -> tuple[float, float]:
        link = LinkModel(between.alpha_us, min(within, between.bandwidth_gbps * factor), LinkSource("what-if"))
        return simulate_step(profile, compute, link, ranks, buckets)

    step_now, exposed_now = modelled(1.0)
    rows = []
    for factor in factors:
        step, exposed = modelled(factor)
        rows.append(
            LinkWhatIf(
                factor,
                round(between.busbw_gbps * factor, 4),
                round(max(profile.compute_ms, profile.step_ms + step - step_now), 3),
                round(max(0.0, profile.exposed_ms + exposed - exposed_now), 3),
            )
        )
    return rows
