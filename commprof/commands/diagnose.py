"""`commprof diagnose`: where a stuck or desynchronised job's ranks were, from the evidence it left, for jobs
commprof did not launch (torchrun, SLURM, mpirun): torch's Flight Recorder dumps, one per rank (NCCL writes them on
a collective timeout with TORCH_NCCL_DUMP_ON_TIMEOUT=1), or the hang_rank<N>.json accounts of a commprof launch.
The same sentence as a failed `commprof run` (launch/hang_evidence.py)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

from commprof.errors import UsageError
from commprof.instrument.hang_watch import recent_collectives
from commprof.launch.hang_evidence import describe_hang
from commprof.results.hang import EVIDENCE_PREFIX, HangEvidence, read_account
from commprof.trace.plain_pickle import plain_loads

HOW_TO_DUMP = (
    "make the job leave them: TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE=<folder>/fr_rank_ "
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1 in every rank's environment (NCCL dumps on a collective timeout)"
)
_RANK_AT_END = re.compile(r"(\d+)(\.\w+)?$")


def diagnose(paths: list[Path]) -> str:
    accounts = read_accounts(paths)
    said = describe_hang(accounts)
    if said is None:
        raise UsageError(f"no Flight Recorder dump or hang account in {', '.join(map(str, paths))}: {HOW_TO_DUMP}")
    return f"{said} (from {len(accounts)} rank{'s' if len(accounts) != 1 else ''}' evidence)"


def read_accounts(paths: list[Path]) -> dict[int, HangEvidence]:
    """rank -> what its dump (or commprof's own account) says, for every file given or in a folder given."""
    accounts: dict[int, HangEvidence] = {}
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
        for file in sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]:
            account = _account(file)
            if account is not None:
                accounts[account.rank] = account
    return accounts


def _account(file: Path) -> HangEvidence | None:
    if file.name.startswith(EVIDENCE_PREFIX) and file.suffix == ".json":
        return read_account(file)
    rank = _RANK_AT_END.search(file.name)  # torch names a dump by its prefix and the rank
    if rank is None or file.suffix in (".json", ".log", ".txt"):
        return None
    dump = _dump(file)
    if dump is None:
        return None
    return HangEvidence(int(rank.group(1)), "", None, file.stat().st_mtime, 0.0, [], recent_collectives(dump))


def _dump(file: Path) -> dict | None:
    """A Flight Recorder dump read as data; None for a file that is not a pickle at all; a pickle that names code
    is refused in one line, before anything in it runs."""
    try:
        data = plain_loads(file.read_bytes())
    except pickle.UnpicklingError as exc:
        if "only plain data is read" in str(exc):
            raise UsageError(f"{file}: {exc}; it is not read") from None
        return None
    except (EOFError, ValueError, IndexError, OSError):
        return None
    return data if isinstance(data, dict) and "entries" in data else None
