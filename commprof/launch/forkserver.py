"""CPU ranks are forked from one process that has imported torch already, commprof's own workers and a user's
script alike.

Spawned, every rank imports torch and, on building DDP, torch._dynamo: about 6 CPU-seconds each, for every launch
(docs/benchmarks.md). multiprocessing's fork server imports them once per commprof process and forks each rank
from that clean, single-threaded state, which torch's elastic agent supports as a start method. A command that
launches several times (sweep, tune, compare, a script's sweep) pays the imports once.

What a forked rank would otherwise get wrong: it inherits the fork server's environment, not this process's at the
time of the launch, so the variables of one launch reach the rank as arguments (`in_environment`); OpenMP read
OMP_NUM_THREADS when the server loaded torch, so the rank applies it again (worker/torch_settings.py); and it is
told "forkserver" as its start method, which it forgets. The server starts in the environment the user gave (not
this process's silenced C++ logs), as soon as a command knows it will launch CPU ranks, before this process
imports torch, so that both imports run side by side. GPU ranks are spawned (a script as its own program, as
torchrun starts it): a fork server that touched CUDA on import could not fork ranks that use it, and on a GPU the
imports are a small part of a job."""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import shutil
import signal
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Callable

from commprof import native_logs
from commprof.config import RunRequest

# what a rank imports before its first step (DDP imports torch._dynamo when it is built)
PRELOADED = (
    "torch",
    "torch._dynamo",
    "torch.distributed",
    "commprof.worker.run",
    "commprof.worker.sweep",
    "commprof.worker.bench",
    "commprof.worker.matrix",
    "commprof.worker.script",
)


def start_method(device: str) -> str:
    return "forkserver" if device == "cpu" else "spawn"


def start_early(request: RunRequest) -> None:
    """For a command about to launch CPU ranks: the fork server starts before this process imports torch, so that
    the two imports run side by side. Where the ranks turn out to be GPU ones (a GPU this cheap check missed), it
    idles."""
    gpu_here = Path("/dev/nvidiactl").exists()
    cpu_ranks = request.device == "cpu" or (request.device == "auto" and not gpu_here)
    if cpu_ranks and request.backend != "mpi":
        start()


def start() -> None:
    """Start the fork server, with torch and the workers imported in it (it imports them while this process goes
    on; a rank's fork waits for them), in the environment the user gave. Once per process.

    It starts in an empty folder of its own: Python starts it with `-c`, which puts the working directory first on
    its path, so a folder there named like what it imports (`commprof/`, the parent of a clone installed with
    `pip install -e`; `torch/`; a `random.py`) was imported instead. Each rank goes back to the launch's working
    directory (`in_environment`), with it off its path."""
    if not _server_folder:
        _server_folder.append(tempfile.mkdtemp(prefix="commprof-forkserver-"))
    here = os.getcwd()
    os.chdir(_server_folder[0])
    try:
        with native_logs.unsilenced():
            multiprocessing.set_forkserver_preload(list(PRELOADED))
            multiprocessing.forkserver.ensure_running()
    finally:
        os.chdir(here)
    atexit.register(_stop, multiprocessing.forkserver._forkserver._forkserver_pid)  # type: ignore[attr-defined]


_server_folder: list[str] = []  # the fork server's working folder, once started


def _stop(pid: int | None) -> None:
    """At this process's exit: the server would notice and end by itself, but tearing down its interpreter, torch
    imported, takes over a second, while it holds this process's stdout and stderr open (a caller reading them to
    their end waits for it). Nothing of it is needed any more: it is killed, its folder removed."""
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for folder in _server_folder:
        shutil.rmtree(folder, ignore_errors=True)


def in_environment(variables: dict[str, str], folder: str, entrypoint: Callable[..., Any], *args: Any) -> Any:
    """On a rank: the launch's working `folder` (the server's is its own, off its path, and so is this one), this
    launch's variables, then the entry point (elastic's own per-rank variables are set)."""
    os.chdir(folder)
    sys.path[:] = [entry for entry in sys.path if entry not in ("", folder)]
    os.environ.update(variables)
    # a process the fork server forks is told "forkserver" as its default start method; a fresh one has none yet
    # (a script's DataLoader workers would each start a fork server that imports torch again)
    multiprocessing.set_start_method(None, force=True)
    return entrypoint(*args)


def exit_returning(value: Any = None) -> None:
    """A forked rank that succeeded leaves now, as a program that returned would: torch elastic's wrapper
    (multiprocessing/api.py `_wrap`) keeps a process alive after its function returned until every rank's has, and
    with it the sockets of the script's process group, on which a peer still inside a collective would wait instead
    of failing. The return value is put where the wrapper would have put it (its queue, `ret_val_`), then the process
    exits 0. Where no such wrapper is found, it returns (the process lingers as before)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and "ret_val_" not in frame.f_locals:
        frame = frame.f_back
    if frame is None:
        return
    frame.f_locals["ret_val_"].put(value)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
