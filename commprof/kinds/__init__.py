"""The kinds of job commprof profiles and tunes, one object each (kinds.base.JobKind): DistributedDataParallel
(commprof's model, a script's, torch.compile over it), FSDP2, DeepSpeed ZeRO and Horovod. A command asks
`KINDS[strategy]` (what the user said), `kind_of(setting)`, or the run's job (results/job.Job: what it built), never
a type."""

from __future__ import annotations

from commprof.kinds.base import JobKind
from commprof.kinds.ddp import DDP
from commprof.kinds.deepspeed import DEEPSPEED
from commprof.kinds.fsdp import FSDP
from commprof.kinds.horovod import HOROVOD
from commprof.results.job import Job
from commprof.results.run_record import RunRecord, RunSummary
from commprof.settings import SettingOptions

KINDS: dict[str, JobKind] = {kind.strategy: kind for kind in (DDP, FSDP, DEEPSPEED, HOROVOD)}


def kind_of(options: SettingOptions) -> JobKind:
    """The kind whose knobs these are."""
    return next(kind for kind in KINDS.values() if type(options) is kind.options)


def built_kind(run: RunRecord | RunSummary) -> JobKind | None:
    """The kind a run's job measures (results/job.Job.kind: the first of its kinds); None where it built none (a
    script of its own collectives)."""
    return KINDS[run.job.kind] if run.job.kind else None


def job_kinds(job: Job) -> list[JobKind]:
    """Every kind the job holds, in its order."""
    return [KINDS[kind] for kind in job.kinds]


__all__ = ["DDP", "DEEPSPEED", "FSDP", "HOROVOD", "KINDS", "JobKind", "built_kind", "job_kinds", "kind_of"]
