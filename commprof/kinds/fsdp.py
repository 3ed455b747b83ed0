"""FSDP2 (`fully_shard`): commprof's model sharded with --strategy fsdp, or a script's own fully_shard calls
(instrument/fsdp_script.py); its options in settings.FSDPOptions. A script's baseline is its fully_shard as written;
a setting sets the options that differ from FSDP2's defaults on top. FSDP has no bucket size: tune measures each knob
changed alone (`knob_settings`)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from commprof.kinds.base import JobKind
from commprof.results.job import Built, BuiltFSDP, Job
from commprof.results.run_record import RunRecord
from commprof.settings import FSDPOptions, SettingOptions, fsdp_as_written
from commprof.trace.model import RankTrace
from commprof.trace.rules import FSDP_PURPOSE, REPLICATE_ALL_REDUCE

_OWN_PURPOSES = frozenset({*FSDP_PURPOSE.values(), REPLICATE_ALL_REDUCE})


class FSDPKind(JobKind):
    strategy: ClassVar[str] = "fsdp"
    record: ClassVar[type[Built]] = BuiltFSDP
    gathers: ClassVar[bool] = True
    options: ClassVar[type] = FSDPOptions
    title: ClassVar[str] = "FSDP"
    engine: ClassVar[str] = "FSDP (fully_shard)"
    short: ClassVar[str] = "FSDP"

    def own_collectives(self, rank: RankTrace, job: Job) -> RankTrace:
        """Every collective of a job of FSDP alone; in a job of several kinds, those FSDP's ranges name as its own
        (parameter all-gathers, gradient reduce-scatters, HSDP's replicate all-reduces)."""
        if job.alone(self.strategy):
            return rank
        own = tuple(c for c in rank.collectives if c.purpose in _OWN_PURPOSES)
        return dataclasses.replace(rank, collectives=own)

    def as_written(self, options: SettingOptions) -> SettingOptions:
        assert isinstance(options, FSDPOptions)  # this kind's own
        return fsdp_as_written(options)

    def is_as_written(self, options: SettingOptions) -> bool:
        return options == fsdp_as_written(FSDPOptions())

    def ran_with(self, setting: SettingOptions, run: RunRecord) -> dict[str, Any]:
        options = super().ran_with(setting, run)
        built = run.job.first(BuiltFSDP)
        if built is not None:
            options |= {k: v for k, v in built.asked.items() if k not in built.applied} | built.applied
        return options

    def knob_settings(self, options: FSDPOptions) -> list[SettingOptions]:
        """What tune measures of FSDP, which has no bucket size: the script's own and each knob changed alone (no
        resharding after forward, one block of forward prefetch, two of backward prefetch, bf16 gradients)."""
        own = fsdp_as_written(options)
        changes: list[dict[str, Any]] = [
            {"reshard_after_forward": False},
            {"forward_prefetch": 1},
            {"backward_prefetch": 2},
            {"reduce_dtype": "bf16"},
        ]
        return [own, *(dataclasses.replace(own, **change) for change in changes)]


FSDP = FSDPKind()
