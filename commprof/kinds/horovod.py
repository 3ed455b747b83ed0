"""Horovod in a user's script (hvd.DistributedOptimizer): its options in settings.HorovodOptions, set as the
environment variables a Horovod user sets before horovodrun (instrument/horovod.py); a script's baseline sets none.
Its fusion buffer is its bucket: gradients ready in the same cycle are fused up to HOROVOD_FUSION_THRESHOLD bytes."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from commprof.kinds.base import JobKind, Layout, Layouts
from commprof.results.job import Built, BuiltHorovod, Job
from commprof.results.run_record import RunRecord
from commprof.settings import HOROVOD_FUSION_GRID_MB, MIB, HorovodOptions, SettingOptions
from commprof.trace.model import RankTrace


class HorovodKind(JobKind):
    strategy: ClassVar[str] = "horovod"
    record: ClassVar[type[Built]] = BuiltHorovod
    options: ClassVar[type] = HorovodOptions
    title: ClassVar[str] = "Horovod"
    engine: ClassVar[str] = "Horovod DistributedOptimizer"
    short: ClassVar[str] = "Horovod"
    size_knob: ClassVar[str | None] = "fusion_threshold_mb"
    size_unit: ClassVar[str] = "MiB"
    grid: ClassVar[tuple[float, ...]] = HOROVOD_FUSION_GRID_MB

    def is_as_written(self, options: SettingOptions) -> bool:
        return options == HorovodOptions()

    def own_collectives(self, rank: RankTrace, job: Job) -> RankTrace:
        """Its allreduces alone (read from its timeline): its broadcasts are not buckets."""
        return dataclasses.replace(rank, collectives=tuple(c for c in rank.collectives if c.op == "all_reduce"))

    def layouts(self, run: RunRecord) -> Layouts:
        """Whether the gradients fill one fusion buffer (a threshold at or above them all), what every such
        threshold fuses alike; below it, each threshold its own."""
        built = run.job.of(BuiltHorovod)[0]
        gradients = sum(built.parameter_sizes)

        def fused(s: HorovodOptions) -> Layout:
            mb = s.fusion_threshold_mb
            threshold = built.fusion_threshold_bytes if mb is None else int(mb * MIB)
            return (min(threshold, gradients),)

        return fused

    def ran_with(self, setting: SettingOptions, run: RunRecord) -> dict[str, Any]:
        built = run.job.first(BuiltHorovod)
        if built is None:
            return super().ran_with(setting, run)
        return {"fusion_threshold_mb": built.fusion_threshold_bytes / MIB, "cycle_time_ms": built.cycle_time_ms}


HOROVOD = HorovodKind()
