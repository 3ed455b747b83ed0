"""PyTorch's NCCL Flight Recorder: each rank's ring buffer of its last collectives, dumped to a file when a
collective times out. commprof asks NCCL ranks to dump into the launch's log folder, and reads the dumps (its own
launch's, or a folder `commprof diagnose` is given) as each rank's account of the hang (results/hang.py), told as
launch/hang_evidence tells every account.

A dump (pickle, as torch writes it, read as data only) holds `pg_status` {pg: {last_completed_collective, ...}} and
`entries` [{pg_id, collective_seq_id, profiling_name, input_sizes, input_dtypes, frames, ...}]."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

from commprof.results.hang import HangEvidence, recent_collectives
from commprof.trace.plain_pickle import NamesCode, plain_loads

BUFFER_SIZE = "2000"
DUMP_PREFIX = "nccl_trace_rank_"  # torch appends the global rank
_RANK_AT_END = re.compile(r"(\d+)(\.\w+)?$")


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


def dump_account(file: Path) -> HangEvidence | None:
    """What one rank's dump says, its rank the number the file's name ends with (as torch names it: the prefix, then
    the rank); None for a file that is not a dump. NamesCode for a pickle that names any code (nothing in it run)."""
    rank = _RANK_AT_END.search(file.name)
    if rank is None:
        return None
    try:
        data = plain_loads(file.read_bytes())
    except NamesCode:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, IndexError, OSError):
        return None
    if not isinstance(data, dict) or "entries" not in data:
        return None
    return HangEvidence(int(rank.group(1)), "", None, file.stat().st_mtime, 0.0, [], recent_collectives(data))


def read_dumps(folder: Path) -> dict[int, HangEvidence]:
    """rank -> what its dump says, for every NCCL dump of this launch in `folder` (a refused one is left out)."""
    accounts = {}
    for path in folder.glob(f"{DUMP_PREFIX}*"):
        try:
            account = dump_account(path)
        except NamesCode:
            continue
        if account is not None:
            accounts[account.rank] = account
    return accounts
