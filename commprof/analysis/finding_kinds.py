"""Every kind of finding, declared once: its facts (results/finding_facts.py), its detector, the kind of job it
belongs to (None: any job's, the ranks' and the profiler's) and how it is weighed: a claim on a predicted gain, a
claim that one rank differs from the others (its whole interval must clear the practical share: analysis/findings.py),
or a note that predicts no step time. render/finding_words.py says what each weighs and each finding's words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from commprof.analysis.bucket_findings import bucket_cap, slow_collectives
from commprof.analysis.distortion import large_slowdown
from commprof.analysis.evidence import Evidence
from commprof.analysis.fsdp_findings import resharding
from commprof.analysis.horovod_findings import horovod_fusion
from commprof.analysis.rank_findings import input_stalls, stalls_now_and_then, straggler
from commprof.analysis.setting_findings import accumulation, compression
from commprof.analysis.zero_findings import zero_bucket_size
from commprof.kinds import DDP, DEEPSPEED, FSDP, HOROVOD, job_kinds
from commprof.results import finding_facts as facts
from commprof.results.job import Job
from commprof.results.rank_facts import InputStall, Stalls, Straggler
from commprof.results.report import Finding

Detector = Callable[[Evidence], list[Finding]]


def profiler_distortion(evidence: Evidence) -> list[Finding]:
    """The profiler's own cost, above WARN_SLOWDOWN: no gain, a note on what the breakdown describes."""
    slowdown = large_slowdown(evidence.job)
    if slowdown is None:
        return []
    return [Finding(kind=facts.ProfilerDistortion.KIND, facts=facts.ProfilerDistortion(slowdown))]


@dataclass(frozen=True)
class FindingKind:
    facts: type
    detector: Detector | None  # None: another kind's detector makes it (LargerBatch: accumulation's)
    job: str | None  # the strategy of the kind of job it belongs to (kinds.KINDS); None: any job's
    weighed: Literal["gain", "rank", "note"]

    @property
    def name(self) -> str:
        return self.facts.KIND  # type: ignore[attr-defined]


FINDING_KINDS: list[FindingKind] = [
    FindingKind(facts.BucketCap, bucket_cap, DDP.strategy, "gain"),
    FindingKind(facts.ZeroBuckets, zero_bucket_size, DEEPSPEED.strategy, "gain"),
    FindingKind(facts.FsdpReshard, resharding, FSDP.strategy, "gain"),
    FindingKind(facts.HorovodFusion, horovod_fusion, HOROVOD.strategy, "gain"),
    FindingKind(facts.Compression, compression, DDP.strategy, "gain"),
    FindingKind(facts.Accumulation, accumulation, DDP.strategy, "gain"),
    FindingKind(facts.LargerBatch, None, DDP.strategy, "gain"),
    FindingKind(facts.SlowCollectives, slow_collectives, DDP.strategy, "gain"),
    FindingKind(InputStall, input_stalls, None, "rank"),
    FindingKind(Straggler, straggler, None, "rank"),
    FindingKind(Stalls, stalls_now_and_then, None, "rank"),
    FindingKind(facts.ProfilerDistortion, profiler_distortion, None, "note"),
]
BY_NAME = {kind.name: kind for kind in FINDING_KINDS}


def checked(job: Job | None) -> list[str]:
    """The kinds of finding weighed for a gain on a job (notes left out): those of any job and those of each kind it
    holds; every one where the job is not known (traces from elsewhere)."""
    held = {kind.strategy for kind in job_kinds(job)} if job is not None else None
    return [
        kind.name
        for kind in FINDING_KINDS
        if kind.weighed != "note" and (kind.job is None or held is None or kind.job in held)
    ]
