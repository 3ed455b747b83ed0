"""Which process group ran each collective of the profiled window, where the trace does not say: commprof's own record.

Gloo's CPU ranges (`gloo:all_gather`) and the ops that launch them carry no process group, so on a job over several
groups (FSDP over a mesh's "dp" dimension, tensor parallelism over "tp") the analysis could not tell a 2-rank group's
collective from the world's. torch's Flight Recorder holds each collective a rank entered, with its group, op, sizes
and the time it was created; when the profiled window's trace is written, each rank writes those entries beside it
(`rank<N>.groups.json`), and trace/groups.py gives each traced collective its group. NCCL's traces name the group
themselves (`Process Group Name` in the kernel's and `record_param_comms`' args)."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

from commprof.instrument.collective_clock import P2P_ROWS
from commprof.trace.groups import GROUPS_FILE, entry_row
from commprof.trace.plain_pickle import plain_loads


def groups_path(run_dir: Path, rank: int) -> Path:
    return run_dir / GROUPS_FILE.format(rank=rank)


def flight_recorder_dump(stacks: bool = False) -> dict[str, Any] | None:
    """This process's Flight Recorder, read as data (`stacks`: with each entry's frames, seconds against a tenth of a
    second without); None where it is off or absent."""
    try:
        from torch._C._distributed_c10d import _dump_fr_trace  # type: ignore[attr-defined]

        dump = plain_loads(_dump_fr_trace(True, stacks, False))
    except (ImportError, RuntimeError, ValueError, KeyError, TypeError, pickle.UnpicklingError):
        return None
    return dump if isinstance(dump, dict) else None


def write_groups(run_dir: Path, rank: int) -> None:
    """The rank's Flight Recorder entries (each: created, group, op, input elements) written beside its trace, whole
    or not at all, with the sends and receives the whole run's clock saw (Gloo's never reach the Flight Recorder);
    nothing where neither holds any."""
    dump = flight_recorder_dump()
    entries = [row for e in (dump or {}).get("entries", []) if (row := entry_row(e)) is not None]
    entries += list(P2P_ROWS)
    if not entries:
        return
    target = groups_path(run_dir, rank)  # written whole or not at all, as the trace is
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps({"entries": entries}))
    os.replace(tmp, target)
