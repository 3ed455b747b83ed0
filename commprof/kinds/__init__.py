"""The kinds of job commprof profiles and tunes, one object each (kinds.base.JobKind): DistributedDataParallel
(commprof's model, a script's, torch.compile over it), FSDP2, DeepSpeed ZeRO and Horovod. A command asks
`KINDS[strategy]` (what the user said), `kind_of(setting)` or `built_kind(run)` (what a script's launch built), never
a type."""

from __future__ import annotations

from commprof.kinds.base import JobKind
from commprof.kinds.ddp import DDP
from commprof.kinds.deepspeed import DEEPSPEED
from commprof.kinds.fsdp import FSDP
from commprof.kinds.horovod import HOROVOD
from commprof.results.run_record import RunRecord
from commprof.settings import SettingOptions

KINDS: dict[str, JobKind] = {kind.strategy: kind for kind in (DDP, FSDP, DEEPSPEED, HOROVOD)}


def kind_of(options: SettingOptions) -> JobKind:
    """The kind whose knobs these are."""
    return next(kind for kind in KINDS.values() if type(options) is kind.options)


def built_kind(run: RunRecord) -> JobKind | None:
    """The kind of job a script's launch built: DDP where it built a DistributedDataParallel, DeepSpeed where it
    built an engine and no DDP, FSDP where it called fully_shard, Horovod where a DistributedOptimizer; None where
    none (a script of its own collectives)."""
    return next((kind for kind in (DDP, DEEPSPEED, FSDP, HOROVOD) if kind.built(run) is not None), None)


__all__ = ["DDP", "DEEPSPEED", "FSDP", "HOROVOD", "KINDS", "JobKind", "built_kind", "kind_of"]
