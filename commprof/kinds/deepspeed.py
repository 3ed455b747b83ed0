"""DeepSpeed ZeRO (stages 0-3) in a user's script: its options in settings.DeepSpeedOptions, set in the
"zero_optimization" section of the config the script gives deepspeed.initialize (instrument/deepspeed.py); a
script's baseline sets none."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from commprof.kinds.base import JobKind, Layout, Layouts
from commprof.results.job import Built, BuiltDeepSpeed, Job
from commprof.results.run_record import RunRecord
from commprof.settings import ZERO_BUCKET_GRID, DeepSpeedOptions, SettingOptions
from commprof.trace.model import RankTrace
from commprof.trace.rules import ZERO_PURPOSE, zero_purpose


class DeepSpeedKind(JobKind):
    strategy: ClassVar[str] = "deepspeed"
    record: ClassVar[type[Built]] = BuiltDeepSpeed
    options: ClassVar[type] = DeepSpeedOptions
    title: ClassVar[str] = "DeepSpeed"
    engine: ClassVar[str] = "DeepSpeed engine"
    short: ClassVar[str] = "ZeRO"
    size_knob: ClassVar[str | None] = "reduce_bucket_size"
    size_unit: ClassVar[str] = "elements"
    grid: ClassVar[tuple[float, ...]] = ZERO_BUCKET_GRID

    own_name: ClassVar[str] = "config"

    def is_as_written(self, options: SettingOptions) -> bool:
        return options == DeepSpeedOptions()

    def own_collectives(self, rank: RankTrace, job: Job) -> RankTrace:
        """Its gradient reductions alone (all-reduces: the model's), each ready when it was launched (ZeRO reduces a
        bucket as soon as it fills)."""
        reduction = ZERO_PURPOSE[("backward", "all_reduce")]
        reductions = tuple(
            dataclasses.replace(c, ready=c.start)
            for c in rank.collectives
            if zero_purpose(c.op, c.phase, c.nbytes, c.dtype) == reduction
        )
        return dataclasses.replace(rank, collectives=reductions)

    def layouts(self, run: RunRecord) -> Layouts:
        """Only whether its gradients fill one reduce bucket (a size at or above them all), what every such size
        builds."""
        engine = run.job.of(BuiltDeepSpeed)[0]
        mine, gradients = engine.settings.get("reduce_bucket_size"), engine.parameters

        def zero_layout(s: DeepSpeedOptions) -> Layout:
            return (int(min(s.reduce_bucket_size or mine or gradients, gradients)),)

        return zero_layout

    def ran_with(self, setting: SettingOptions, run: RunRecord) -> dict[str, Any]:
        options = super().ran_with(setting, run)
        engine = run.job.first(BuiltDeepSpeed)
        if engine is not None:
            options["zero_stage"] = engine.zero_stage
            options |= {name: engine.settings[name] for name in options if name in engine.settings}
        return options


DEEPSPEED = DeepSpeedKind()
