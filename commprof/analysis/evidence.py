"""What every finding's detector reads (analysis/finding_kinds.py): one run's report, its profiled steps and what
the run measured beside them, with what several detectors derive from them computed once."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from commprof.analysis.crossrank import Matching
from commprof.analysis.predict import LinkModel, StepProfile, fit_link, probed_link, step_profile
from commprof.errors import UsageError
from commprof.kinds import DDP, JobKind
from commprof.kinds.ddp_buckets import DEFAULT_CAP_MB, owners, ran_cap
from commprof.results.finding_facts import LinkSource
from commprof.results.job import BuiltDDP
from commprof.results.report import JobStep, Report
from commprof.results.run_record import ProbedSize
from commprof.settings import DDPOptions
from commprof.trace.model import RankTrace, RunTrace, Step

MAX_MODELLED_RANKS = 8  # the bucket model reads the buckets of this many ranks (they all run the same ones)


@dataclass(frozen=True)
class Evidence:
    """`ceiling`: the all-reduce bus bandwidth `commprof bench` measured on this host (GB/s, which bench); `drift_ms`:
    how far the job's unprofiled step moved within the launch (analysis/distortion.job_drift_ms); `waits`: what each
    rank made the others wait at each step of the whole run, beyond the time it waited for a core longer than they
    did, which is `core_waits` (analysis/whole_run.waits_caused)."""

    report: Report
    windows: list[tuple[RankTrace, list[Step]]]
    matching: Matching | None = None
    job: JobStep | None = None
    ceiling: tuple[float, LinkSource] | None = None
    drift_ms: float = 0.0
    waits: dict[int, dict[int, float]] = field(default_factory=dict)
    core_waits: dict[int, dict[int, float]] = field(default_factory=dict)
    # samples_of's and link_of's, per kind, computed once
    _profiles_by_kind: dict[JobKind, list[StepProfile]] = field(default_factory=dict, repr=False, compare=False)
    _links_by_kind: dict[JobKind, LinkModel | None] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def step_ms(self) -> float:
        """The profiled step: the median over ranks of each rank's median."""
        return statistics.median(r.step_time_ms.median for r in self.report.ranks)

    @property
    def job_ms(self) -> float:
        """What a gain is a share of: the job's step without the profiler, else the profiled step."""
        return self.job.unprofiled_ms if self.job else self.step_ms

    def samples_of(self, kind: JobKind) -> list[StepProfile]:
        """One step profile per profiled step of the first ranks, for the bucket model, of what the kind's instances
        all-reduced (kinds.base.JobKind.own_collectives; steps without a backward skipped); none where the job holds
        no instance of the kind (traces from elsewhere: read as DDP's), or on one rank."""
        if kind not in self._profiles_by_kind:
            job = self.report.run.job if self.report.run else None
            held = kind.unrecorded if job is None else kind.built_of(job) is not None
            own = (lambda rank: kind.own_collectives(rank, job)) if job is not None else (lambda rank: rank)
            self._profiles_by_kind[kind] = _profiles(self.windows, own) if held else []
        return self._profiles_by_kind[kind]

    def link_of(self, kind: JobKind) -> LinkModel | None:
        """The link the bucket model runs on for the kind's collectives: probed, else fitted to its samples; None
        without samples or a link that fits."""
        if kind not in self._links_by_kind:
            self._links_by_kind[kind] = self._link(self.samples_of(kind))
        return self._links_by_kind[kind]

    def model_samples(self, model: str) -> list[StepProfile]:
        """The step profiles of one DDP model of a script with several: its own all-reduces alone (analysis/models)."""
        run = self.report.run
        if run is None or not self.samples_of(DDP):
            return []
        own = {size for size, names in owners(run.job.of(BuiltDDP)).items() if names == [model]}
        return _profiles(self.windows, lambda rank: _of_sizes(rank, own))

    @property
    def probe(self) -> list[ProbedSize]:
        """The link commprof's own runs time alone after training (empty for others' traces)."""
        return self.report.run.link_probe if self.report.run else []

    def _link(self, samples: list[StepProfile]) -> LinkModel | None:
        if not samples:
            return None
        try:
            return probed_link(self.probe, samples[0].world_size) if self.probe else fit_link(samples)
        except UsageError:
            return None

    @property
    def serial(self) -> bool:
        """CPU ranks: communication takes the backward's cores, so every all-reduce counts in full."""
        return self.windows[0][0].kind == "cpu"

    @cached_property
    def options(self) -> tuple[DDPOptions, str]:
        """current_options of the report."""
        return current_options(self.report)


def _profiles(
    windows: list[tuple[RankTrace, list[Step]]], keep: Callable[[RankTrace], RankTrace] = lambda rank: rank
) -> list[StepProfile]:
    """One step profile per profiled step of the first ranks (`keep`: what of each rank the model reads), those
    without a backward or a gradient all-reduce skipped; none on one rank or from fewer than two steps."""
    samples = []
    for rank, _ in windows[:MAX_MODELLED_RANKS]:
        kept = keep(rank)
        for index, step in enumerate(kept.steps):
            one = dataclasses.replace(
                kept,
                steps=(step,),
                backward_starts=kept.backward_starts[index : index + 1],
                backward_ends=kept.backward_ends[index : index + 1],
            )
            try:
                sample = step_profile(RunTrace((one,)))
            except UsageError:
                continue
            if sample.bucket_bytes:
                world = rank.world_size or len(windows)  # a trace without distributedInfo (Horovod's) has none
                transfers = [(nbytes, world, us) for nbytes, _, us in sample.transfers]
                samples.append(dataclasses.replace(sample, world_size=world, transfers=transfers))
    return samples if len(samples) >= 2 and samples[0].world_size >= 2 else []


def _of_sizes(rank: RankTrace, sizes: set[int]) -> RankTrace:
    """A rank's all-reduces of these sizes alone (one model's buckets)."""
    own = tuple(c for c in rank.collectives if c.op == "all_reduce" and c.nbytes in sizes)
    return dataclasses.replace(rank, collectives=own)


def current_options(report: Report, model: str | None = None) -> tuple[DDPOptions, str]:
    """The DDP options the run trained with (`model`: that DDP's, of a script with several), and who built its DDP.
    A script's own DDP arguments (what it asked for, with what commprof applied on top) win over commprof's options,
    which it only applies when given."""
    run = report.run
    options = run.config.ddp if run else DDPOptions()
    built = _built(report, model)
    if built is None:
        return options, "script"
    known = {f.name for f in dataclasses.fields(DDPOptions)}
    given = {k: v for k, v in {**built.asked, **built.applied}.items() if k in known and v is not None}
    return dataclasses.replace(options, **given), built.built_by


def current_cap(report: Report, model: str | None = None) -> float | None:
    """The bucket_cap_mb DDP was built with; None when nobody gave one (DDP's default, with its 1 MB first bucket).
    commprof's built-in runs always pass theirs; a script's is what it asked for, or what commprof applied."""
    run = report.run
    if run is None:
        return DEFAULT_CAP_MB
    if not run.script:
        return run.config.ddp.bucket_cap_mb
    built = _built(report, model)
    return ran_cap(built) if built else None


def _built(report: Report, model: str | None) -> BuiltDDP | None:
    """A script's DDP: the one named `model`, else the first it built."""
    run = report.run
    return run.job.named(BuiltDDP, model) if run is not None and run.script else None
