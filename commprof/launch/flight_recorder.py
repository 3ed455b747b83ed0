"""PyTorch's NCCL Flight Recorder: each rank's ring buffer of its last collectives, dumped to a file when a
collective times out. commprof turns it on for NCCL jobs and reads the dumps to name the rank that never
arrived: the others entered a collective it never entered.

A dump (pickle, as torch writes it) holds `pg_status` {pg: {last_enqueued_collective, ...}} and
`entries` [{pg_id, collective_seq_id, profiling_name, state, ...}]."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, Mapping

from commprof.trace.plain_pickle import plain_loads

BUFFER_SIZE = "2000"
DUMP_PREFIX = "nccl_trace_rank_"  # torch appends the global rank


def environment(folder: Path) -> dict[str, str]:
    """Variables that make every NCCL rank record its collectives and dump them into `folder` on a timeout (the
    names torch has used: TORCH_FR_* from 2.6, TORCH_NCCL_* before)."""
    prefix = str(folder / DUMP_PREFIX)
    return {
        "TORCH_FR_BUFFER_SIZE": BUFFER_SIZE,
        "TORCH_NCCL_TRACE_BUFFER_SIZE": BUFFER_SIZE,
        "TORCH_FR_DUMP_TEMP_FILE": prefix,
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": prefix,
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
    }


def read_dumps(folder: Path) -> dict[int, dict[str, Any]]:
    """rank -> its dump, for every dump in `folder` that can be read."""
    dumps = {}
    for path in folder.glob(f"{DUMP_PREFIX}*"):
        try:
            rank = int(path.name[len(DUMP_PREFIX) :])
            dumps[rank] = plain_loads(path.read_bytes())
        except (ValueError, OSError, pickle.UnpicklingError, EOFError):
            continue
    return dumps


def _last_entered(dump: Mapping[str, Any], pg: str) -> tuple[int, str]:
    """The sequence number of the last collective the rank entered in process group `pg`, and its name."""
    entries = [e for e in dump.get("entries", []) if str(e.get("pg_id")) == pg and not e.get("is_p2p")]
    statuses = dump.get("pg_status", {})
    status = statuses.get(pg) or (statuses.get(int(pg)) if pg.isdigit() else None) or {}
    seq = status.get("last_enqueued_collective", max((e.get("collective_seq_id", -1) for e in entries), default=-1))
    return seq, next((e.get("profiling_name", "") for e in entries if e.get("collective_seq_id") == seq), "")


def who_never_arrived(dumps: Mapping[int, Mapping[str, Any]], pg: str = "0") -> str | None:
    """A sentence naming the ranks behind the others in process group `pg`, or None when no rank is."""
    if len(dumps) < 2:
        return None
    entered = {rank: _last_entered(dump, pg) for rank, dump in dumps.items()}
    ahead = max(seq for seq, _ in entered.values())
    behind = sorted(rank for rank, (seq, _) in entered.items() if seq < ahead)
    if not behind:
        return None
    waiting = sorted(rank for rank, (seq, _) in entered.items() if seq == ahead)
    operation = next((name for seq, name in entered.values() if seq == ahead and name), "")
    what = f"collective #{ahead}" + (f" ({operation.removeprefix('nccl:')})" if operation else "")
    return (
        f"rank{'s' if len(behind) > 1 else ''} {', '.join(map(str, behind))} never reached {what} of process "
        f"group {pg}, which rank{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting))} entered "
        "(NCCL flight recorder)"
    )
