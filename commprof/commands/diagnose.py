"""`commprof diagnose`: where a stuck or desynchronised job's ranks were, from the evidence it left, for jobs
commprof did not launch (torchrun, SLURM, mpirun): torch's Flight Recorder dumps, one per rank (NCCL writes them on
a collective timeout with TORCH_NCCL_DUMP_ON_TIMEOUT=1), the job's logs where NCCL's watchdog wrote its timeouts
(launch/watchdog_log.py), or the hang_rank<N>.json accounts of a commprof launch. The same sentence as a failed
`commprof run` (launch/hang_evidence.py)."""

from __future__ import annotations

from pathlib import Path

from commprof.errors import UsageError
from commprof.launch.flight_recorder import dump_account
from commprof.launch.hang_evidence import describe_hang
from commprof.launch.watchdog_log import read_watchdog_log
from commprof.results.failure_facts import Hang
from commprof.results.hang import EVIDENCE_PREFIX, HangEvidence, read_account
from commprof.trace.plain_pickle import NamesCode

LOGS = (".log", ".txt", ".out", ".err")  # a job's logs, where NCCL's watchdog wrote its timeouts
HOW_TO_DUMP = (
    "make the job leave them: TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE=<folder>/fr_rank_ "
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1 in every rank's environment (NCCL dumps on a collective timeout)"
)


def diagnose(paths: list[Path]) -> tuple[Hang, int]:
    """The hang the evidence in `paths` tells, and how many ranks left evidence."""
    accounts = read_accounts(paths)
    hang = describe_hang(accounts)
    if hang is None:
        raise UsageError(f"no Flight Recorder dump or hang account in {', '.join(map(str, paths))}: {HOW_TO_DUMP}")
    return hang, len(accounts)


def read_accounts(paths: list[Path]) -> dict[int, HangEvidence]:
    """rank -> what its dump (or commprof's own account) says, for every file given or in a folder given; a rank
    known only from a log's watchdog lines gets what they say."""
    accounts: dict[int, HangEvidence] = {}
    logged: dict[int, HangEvidence] = {}
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
        for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            if file.suffix in LOGS:
                logged.update(read_watchdog_log(file))
                continue
            account = _account(file)
            if account is not None:
                accounts[account.rank] = account
    return {**logged, **accounts}


def _account(file: Path) -> HangEvidence | None:
    if file.name.startswith(EVIDENCE_PREFIX) and file.suffix == ".json":
        return read_account(file)
    if file.suffix == ".json":
        return None
    try:
        return dump_account(file)
    except NamesCode as exc:
        raise UsageError(f"{file}: {exc}; it is not read") from None
