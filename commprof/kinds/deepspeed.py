"""DeepSpeed ZeRO (stages 0-3) in a user's script: its options in settings.DeepSpeedOptions, set in the
"zero_optimization" section of the config the script gives deepspeed.initialize (instrument/deepspeed.py); a
script's baseline sets none."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from commprof.kinds.base import JobKind, Layout, Layouts
from commprof.results.job import Built, BuiltDeepSpeed, Job
from commprof.results.run_record import RunRecord
from commprof.settings import ZERO_BUCKET_GRID, DeepSpeedOptions, SettingOptions, elements
from commprof.trace.model import RankTrace
from commprof.trace.rules import ZERO_PURPOSE, zero_purpose


class DeepSpeedKind(JobKind):
    strategy: ClassVar[str] = "deepspeed"
    record: ClassVar[type[Built]] = BuiltDeepSpeed
    unused: ClassVar[str] = "the script built no DeepSpeed engine: the ZeRO options had no effect"
    options: ClassVar[type] = DeepSpeedOptions
    title: ClassVar[str] = "DeepSpeed"
    engine: ClassVar[str] = "DeepSpeed engine"
    short: ClassVar[str] = "ZeRO"
    knobs: ClassVar[str] = "ZeRO's options"
    size_knob: ClassVar[str | None] = "reduce_bucket_size"
    size_unit: ClassVar[str] = "elements"
    grid: ClassVar[tuple[float, ...]] = ZERO_BUCKET_GRID

    own_name: ClassVar[str] = "config"
    instead: ClassVar[str] = (
        "its gradients go in ZeRO's reduce buckets: commprof sweep --strategy deepspeed --reduce-bucket-size 5e7,2e8 "
        "-- SCRIPT, or commprof tune -- SCRIPT"
    )

    def trains_with(self, run: RunRecord) -> str:
        engine = run.job.first(BuiltDeepSpeed)
        return f"DeepSpeed (ZeRO stage {engine.zero_stage})" if engine else "DeepSpeed"

    def written(self, ran: Mapping[str, Any]) -> str:
        entries = DeepSpeedOptions(**ran).zero_config()
        said = ", ".join(f"{name} {_json_value(value)}" for name, value in entries.items())
        return f"zero_optimization {said or 'not recorded'}"

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

        def described(built: Layout) -> str:
            whole = built[0] >= gradients
            return (
                f"one bucket of all {gradients:,} gradient elements"
                if whole
                else f"{elements(built[0])}-element buckets"
            )

        return zero_layout, described

    def ran_with(self, setting: SettingOptions, run: RunRecord) -> dict[str, Any]:
        options = super().ran_with(setting, run)
        engine = run.job.first(BuiltDeepSpeed)
        if engine is not None:
            options["zero_stage"] = engine.zero_stage
            options |= {name: engine.settings[name] for name in options if name in engine.settings}
        return options

    def tried(self, settings: Sequence[SettingOptions]) -> str:
        sizes = ", ".join(elements(self.size(vars(s))) for s in settings)
        return f"the script's own config and reduce_bucket_size {sizes} elements,"

    def paste(self, options: SettingOptions, framework: str = "script", baseline: SettingOptions | None = None) -> str:
        """The "zero_optimization" entries to set in the script's DeepSpeed config (a dict or its JSON file), as JSON
        writes them: those in which the setting differs from `baseline` (the script's own config, as it ran)."""
        assert isinstance(options, DeepSpeedOptions)  # this kind's own
        own = baseline.zero_config() if isinstance(baseline, DeepSpeedOptions) else {}
        entries = {name: value for name, value in options.zero_config().items() if own.get(name) != value}
        text = ", ".join(f'"{name}": {_json_value(value)}' for name, value in entries.items())
        return f'"zero_optimization": {{{text}}}  # in the config given to deepspeed.initialize; the rest as it is'


def _json_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return elements(value) if isinstance(value, int) and value >= 1e4 else str(value)


DEEPSPEED = DeepSpeedKind()
