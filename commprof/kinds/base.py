"""What every kind of job says of itself (`JobKind`): the commands and the analysis ask it, and never test types."""

from __future__ import annotations

import dataclasses
from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from commprof.config import RunConfig
from commprof.results.job import Built, Job
from commprof.results.run_record import RunRecord, RunSummary
from commprof.settings import SettingOptions
from commprof.trace.model import RankTrace

Layout = tuple[Any, ...]  # bucket bytes; of a script with several DDP models, one such tuple per model
# a setting's buckets, learnt from a script's launch, and how to say one layout
Layouts = Callable[[Any], Layout]  # a setting's buckets


class JobKind(ABC):
    """One kind of job: its knobs (`options`, a settings dataclass: each declared once, with default, help and
    validation), how a setting is applied to a run and written in the user's code, whether a script's launch built
    it, its bucket layout, and the bucket size a tune varies."""

    strategy: ClassVar[str]  # --strategy's value, RunConfig's field that holds its options, its record's tag
    record: ClassVar[type[Built]]  # what a run records of each instance of it (results/job.py)
    options: ClassVar[type]
    engine: ClassVar[str]  # what a script builds of it, as its user knows it
    title: ClassVar[str]  # the kind, by name: DistributedDataParallel, DeepSpeed, Horovod
    short: ClassVar[str]  # its name before its knobs: DDP's bucket_cap_mb, ZeRO's reduce_bucket_size
    knobs: ClassVar[str]  # its options, as a refusal names them
    own_name: ClassVar[str] = "setting"  # what a script's own setting is called: the script's own setting, config
    # what to do where another kind's knobs were given for a job of this kind ({strategy}: the other kind's)
    size_knob: ClassVar[str | None] = None  # the bucket size tune varies; None: tune has nothing to size
    size_unit: ClassVar[str] = ""
    grid: ClassVar[tuple[float, ...]] = ()  # tune's first sizes
    reads_ddp: ClassVar[bool] = False  # DDP's buckets and own timers are read from its runs
    # traces from elsewhere (no run record: no job known) are read as this kind's
    unrecorded: ClassVar[bool] = False
    default: ClassVar[bool] = False  # the kind a command trains when --strategy names none
    modelled: ClassVar[bool] = False  # scale's step model (gradient buckets on a ring) is this kind's
    gathers: ClassVar[bool] = False  # its step's communication is counted by its parameter all-gathers (a sweep's)
    # what a script's rank notes where --strategy named this kind and the script built none of it

    def as_written(self, options: SettingOptions) -> SettingOptions:
        """A script's baseline: its job as it wrote it, with the options given on top."""
        return options

    def baseline(self, run: RunSummary) -> SettingOptions:
        """The setting a run trained with, as a sweep's baseline (advise's): a script's job as written with what the
        run set on top; commprof's model's options as given."""
        options = getattr(run.config, self.strategy)
        return self.as_written(options) if run.script else options

    def is_as_written(self, options: SettingOptions) -> bool:
        """The setting changes nothing the script wrote (it is the script's own)."""
        return False

    def configured(self, config: RunConfig, options: SettingOptions) -> RunConfig:
        """The run with this setting applied."""
        changes: dict[str, Any] = {self.strategy: options}
        return dataclasses.replace(config, **changes)

    def sized(self, options: SettingOptions, size: float) -> SettingOptions:
        """The setting with tune's bucket size."""
        if self.size_knob is None:
            raise NotImplementedError(self.strategy)  # only a kind that tune sizes
        changes: dict[str, Any] = {self.size_knob: size}
        return dataclasses.replace(options, **changes)

    def size(self, options: Mapping[str, Any]) -> float:
        """The bucket size a setting (as a sweep records it) sorts by; 0 where it has none."""
        return (options.get(self.size_knob) if self.size_knob else None) or 0

    def own_collectives(self, rank: RankTrace, job: Job) -> RankTrace:
        """What of a rank's collectives this kind's detectors read as its instances' (its evidence): all of them,
        unless the kind says otherwise."""
        return rank

    def built(self, run: RunRecord | RunSummary) -> Built | None:
        """What a run built of this kind (the first: the one measured); None: not this kind."""
        return self.built_of(run.job)

    def built_of(self, job: Job) -> Built | None:
        """The job's first instance of this kind; None: it holds none."""
        return next((b for b in job.built if isinstance(b, self.record)), None)

    def layouts(self, run: RunRecord) -> Layouts:
        """A setting's buckets, from the baseline's launch of a script (render/kind_words says them); only the kinds
        tune sizes (`size_knob`) have them."""
        raise NotImplementedError(self.strategy)

    def ran_with(self, setting: SettingOptions, run: RunRecord) -> dict[str, Any]:
        """The options a setting really ran with: the script's own, with what commprof set on top."""
        return dataclasses.asdict(setting)

    def forced(self, settings: Sequence[SettingOptions], baseline: SettingOptions) -> tuple[str, ...]:
        """The arguments every setting but the baseline sets even at their default (see kinds.ddp)."""
        return ()

    def knob_settings(self, options: Any) -> list[SettingOptions]:
        """What tune measures of a kind without a bucket size (FSDP's knobs, each changed alone); none: not tuned."""
        return []
