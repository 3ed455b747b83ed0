"""Findings: what to change, with the gain the measured step predicts, ranked; none on noise.

Each kind of finding is declared once, in analysis/finding_kinds.FINDING_KINDS: its facts, its detector (a function
of the run's Evidence, analysis/evidence.py, that returns the findings of its kind), its kind of job and how it is
weighed (docs/architecture.md, "A new finding"). Detectors by what predicts their gain: the bucket model
(analysis/bucket_findings.py; for DeepSpeed's buckets, analysis/zero_findings.py), what the run measured of casts,
accumulation and batch (analysis/setting_findings.py), the ranks' own steps and waits (analysis/rank_findings.py),
the profiler's cost (a note).

Each gain is a median over the profiled steps (of every analysed rank) with a 95% bootstrap interval, widened for a
rerun and by the job's own drift, and is claimed only when that interval excludes zero and the gain is at least 3% of
the step (the one rule of analysis/stats.py); the others are kept as weighed within the noise."""

from __future__ import annotations

import dataclasses
from typing import cast

from commprof.analysis.evidence import Evidence
from commprof.analysis.finding_kinds import BY_NAME, FINDING_KINDS
from commprof.analysis.stats import real_gain, rerun_interval
from commprof.results.common import PRACTICAL_SHARE, Estimate
from commprof.results.finding_facts import BucketCap, SlowCollectives
from commprof.results.report import Finding


def findings(evidence: Evidence) -> tuple[list[Finding], list[Finding]]:
    """The claims (ranked; the notes that predict no gain last) and the findings whose
    gain is within the noise (ranked), each with the interval a rerun's gain falls in."""
    found = [f for kind in FINDING_KINDS if kind.detector for f in kind.detector(evidence)]
    found = _one_advice_on_buckets(found, evidence.step_ms)
    job_ms = evidence.job_ms
    weighed = [_weighed(f, job_ms, evidence.drift_ms) for f in found if f.gain_ms is not None]
    weighed.sort(key=lambda f: -(f.gain_ms.value if f.gain_ms else 0.0))
    claims = [f for f in weighed if claimed(f, job_ms)]
    notes = [f for f in found if f.gain_ms is None]
    return claims + notes, [f for f in weighed if f not in claims]


# Claims that one rank differs from the others (weighed "rank"). Ranks that run the same code differ from launch to
# launch too (where the OS places each on the cores they share, which of them writes commprof's own files): one launch
# measures its own spread, not that one. Their whole interval must clear the practical share, not only their value:
# identical ranks had made such a claim in 1 launch of 3 (2.1 ms, 95% CI 0.04 to 5.65, on a 67 ms step), a rank slowed
# 30 ms clears it in every cell of benchmarks/check/straggler_grid.py.
# And at least RANK_FLOOR_MS a step: on a 2.6 ms step the practical share is 0.08 ms, and no_ddp.py's identical ranks
# claimed an input stall of 0.13 ms (95% CI 0.12 to 0.18) in 1 launch of 5 (Python between the steps, a core's wake-up).
RANK_FLOOR_MS = 0.5


def claimed(finding: Finding, job_ms: float) -> bool:
    """A weighed finding worth a claim (analysis/stats.real_gain); a claim about a rank with its whole interval at the
    practical share or more, and at RANK_FLOOR_MS or more."""
    gain = finding.gain_ms
    if gain is None or not real_gain(gain, job_ms):
        return False
    return BY_NAME[finding.kind].weighed != "rank" or gain.low >= max(PRACTICAL_SHARE * job_ms, RANK_FLOOR_MS)


def _one_advice_on_buckets(found: list[Finding], step_ms: float) -> list[Finding]:
    """Slow all-reduces are the evidence of a bucket_cap finding that stands, not a finding of their own."""
    cap = next((f for f in found if f.kind == "bucket_cap"), None)
    slow = next((f for f in found if f.kind == "slow_collectives"), None)
    if cap is None or slow is None or cap.gain_ms is None or not real_gain(cap.gain_ms, step_ms):
        return found
    joined = dataclasses.replace(
        cap, facts=dataclasses.replace(cast(BucketCap, cap.facts), slow=cast(SlowCollectives, slow.facts))
    )
    return [joined if f is cap else f for f in found if f is not slow]


def _weighed(finding: Finding, job_ms: float, drift_ms: float) -> Finding:
    """The finding with the interval a rerun's gain falls in, widened by the job's own drift, and its gain a share of
    the job's step without the profiler (else of the profiled step). No change saves more than the whole step: the
    interval (and the gain) end there."""
    gain = rerun_interval(cast(Estimate, finding.gain_ms))
    held = job_ms if job_ms > 0 else float("inf")
    widened = Estimate(min(gain.value, held), min(gain.low - drift_ms, held), min(gain.high + drift_ms, held))
    return dataclasses.replace(finding, gain_ms=widened, gain_pct=widened.value / job_ms * 100)
