"""The job as a run really built it, in facts that scale and compare share: its kind, its model, the kind's own
settings, and the bus bandwidth of each collective it ran (render/job_text.py makes their words)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CollectiveBusbw:
    """One collective the job ran, by what the job ran it as, at one size: its bus bandwidth."""

    collective: str  # what the job ran: all_reduce, all_gather, reduce_scatter (FSDP's purpose where the trace says)
    op: str  # what the backend ran it as: Gloo runs FSDP's reduce-scatter as an all_reduce of the whole buffer
    bytes: int
    busbw_gbps: float


@dataclass(frozen=True)
class JobAsRun:
    """What a run trained: its kind, its model as built and the kind's own settings, as far as the run recorded."""

    # the kind of job (kinds.KINDS): ddp, fsdp, deepspeed, horovod; None: a script that built none commprof saw
    strategy: str | None
    model: str | None = None  # the module's class (a built-in model's name); None: not recorded
    parameters: int | None = None  # None: not known
    # the kind's own options as the job ran with them, by the kind's own names; None: not recorded (a script's own)
    settings: dict[str, Any] | None = None
