"""DistributedDataParallel: commprof's own model, DDP in a user's script (plain, Hugging Face Trainer, Lightning),
and torch.compile over DDP; its options in settings.DDPOptions, its buckets in kinds.ddp_buckets.

A script's baseline is its DDP as written (settings.own_setting: commprof passes it no bucket_cap_mb, nor any option
not given). Every other setting is applied on top of the script's own arguments: each DDP argument in which the
settings differ from the baseline is set, even at DDP's default value (`forced`), and the others stay as the script
wrote them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from commprof.kinds.base import JobKind, Layout, Layouts
from commprof.kinds.ddp_buckets import layout, owners
from commprof.results.job import Built, BuiltDDP, Job
from commprof.results.run_record import RunRecord, RunSummary
from commprof.settings import DDP_ARGUMENTS, DDP_BUCKET_GRID_MB, DDPOptions, SettingOptions, own_setting
from commprof.trace.model import RankTrace


class DDPKind(JobKind):
    strategy: ClassVar[str] = "ddp"
    record: ClassVar[type[Built]] = BuiltDDP
    options: ClassVar[type] = DDPOptions
    title: ClassVar[str] = "DistributedDataParallel"
    engine: ClassVar[str] = "DistributedDataParallel"
    short: ClassVar[str] = "DDP"
    size_knob: ClassVar[str | None] = "bucket_cap_mb"
    size_unit: ClassVar[str] = "MB"
    grid: ClassVar[tuple[float, ...]] = DDP_BUCKET_GRID_MB
    reads_ddp: ClassVar[bool] = True
    unrecorded: ClassVar[bool] = True
    default: ClassVar[bool] = True
    modelled: ClassVar[bool] = True

    def own_collectives(self, rank: RankTrace, job: Job) -> RankTrace:
        """Every collective of a job of DDP alone; in a job of several kinds (an FSDP encoder and a DDP head), the
        all-reduces of its DDPs' bucket sizes."""
        if job.alone(self.strategy):
            return rank
        sizes = set(owners(job.of(BuiltDDP)))
        own = tuple(c for c in rank.collectives if c.op == "all_reduce" and c.nbytes in sizes)
        return dataclasses.replace(rank, collectives=own)

    def as_written(self, options: SettingOptions) -> SettingOptions:
        assert isinstance(options, DDPOptions)  # this kind's own
        return own_setting(options)

    def baseline(self, run: RunSummary) -> SettingOptions:
        """A script's: its DDPs as written (settings.own_setting) with the options the run set on top, its
        bucket_cap_mb only if it set one. Launched like the run, it builds the same: with --ddp-model, the cap it set
        on that model, and the others' as the run gave them."""
        if not run.script:
            return run.config.ddp
        target = run.config.ddp.ddp_model
        built = run.job.named(BuiltDDP, target)
        others = [b for b in run.job.of(BuiltDDP) if b is not built and "bucket_cap_mb" in b.applied]
        return dataclasses.replace(
            own_setting(run.config.ddp),
            bucket_cap_mb=_cap(built.applied) if built else None,
            others_bucket_cap_mb=_cap(others[0].applied) if target and others else None,
        )

    def is_as_written(self, options: SettingOptions) -> bool:
        return getattr(options, "bucket_cap_mb", 0) is None

    def layouts(self, run: RunRecord) -> Layouts:
        """As DDP builds them for the module the script wrapped (a setting that applies no cap: what the script
        passes, or DDP's default); of a script with several DDPs, each model's buckets, those of the models a setting
        leaves alone (--ddp-model) as the script wrote them."""
        every = run.job.of(BuiltDDP)

        def one(built: BuiltDDP, setting: Any) -> Layout:
            asked = built.asked.get("bucket_cap_mb")
            own = float(asked) if asked is not None else None
            if setting.ddp_model not in (None, built.label):  # another model's setting: this one keeps its own
                own = setting.others_bucket_cap_mb if setting.others_bucket_cap_mb is not None else own
                return layout(built.parameter_sizes, own)
            return layout(built.parameter_sizes, setting.bucket_cap_mb if setting.bucket_cap_mb is not None else own)

        if len(every) == 1:
            return lambda s: one(every[0], s)
        return lambda s: tuple(one(b, s) for b in every)

    def ran_with(self, setting: SettingOptions, run: RunRecord) -> dict[str, Any]:
        options = super().ran_with(setting, run)
        target = getattr(setting, "ddp_model", None)
        built = run.job.named(BuiltDDP, target)
        for name in DDP_ARGUMENTS if built else ():
            assert built is not None
            if name in built.applied:
                options[name] = built.applied[name]
            elif name in built.asked:
                options[name] = built.asked[name]
        return options

    def forced(self, settings: Sequence[SettingOptions], baseline: SettingOptions) -> tuple[str, ...]:
        """The DDP arguments in which some setting differs from the baseline (the baseline applies none but those
        the command line named for every setting: `--no-find-unused-parameters`)."""
        return tuple(
            name for name in DDP_ARGUMENTS if any(getattr(s, name) != getattr(baseline, name) for s in settings)
        )


def _cap(applied: Mapping[str, Any]) -> float | None:
    return float(applied["bucket_cap_mb"]) if applied.get("bucket_cap_mb") is not None else None


DDP = DDPKind()
