"""What every worker process needs: its identity, the process group, the run folder, errors."""

from __future__ import annotations

import functools
import os
import platform
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import get_error_handler

import commprof
from commprof.config import RunConfig


@dataclass(frozen=True)
class RankContext:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device


class RankStopped(BaseException):
    """The launcher stopped this rank (SIGTERM), normally because another rank failed."""


STOPPED_MESSAGE = "stopped by the launcher (SIGTERM) while still running"


def _stop(signum: int, frame: Any) -> None:
    # Launchers may signal more than once; the first stop must be able to finish unwinding (the
    # launcher's SIGKILL after its grace period still bounds it).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise RankStopped(STOPPED_MESSAGE)


def exit_on_error(entry: Callable[..., Any]) -> Callable[..., Any]:
    """On any error, record it for the launcher (error.json) and leave at once.

    SIGTERM becomes an exception, so a rank the launcher stops still unwinds: the profiler writes
    the trace it was recording. os._exit skips the C++ teardown of a process group whose peers are
    gone, which otherwise aborts noisily after the real error has been recorded."""

    @functools.wraps(entry)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        signal.signal(signal.SIGTERM, _stop)
        try:
            return entry(*args, **kwargs)
        except BaseException as exc:
            try:
                get_error_handler().record_exception(exc)
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(1)

    return wrapper


def mpi_through_mpi4py(config: RunConfig) -> bool:
    """torch has no native MPI backend here: DDP gets a Gloo group and its gradients go over mpi4py."""
    return config.backend == "mpi" and not dist.is_mpi_available()


@contextmanager
def distributed(config: RunConfig, store: Any = None) -> Iterator[RankContext]:
    """Join the process group (rank and world from the launcher's environment; `store` from MPI bootstrap)."""
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank) if config.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    elif "OMP_NUM_THREADS" not in os.environ:
        # torchrun sets OMP_NUM_THREADS=1 for several ranks per node; elastic_launch does not. Without a
        # share each, CPU ranks oversubscribe the cores and stall for seconds in OpenMP spin-waits.
        torch.set_num_threads(cpu_threads_per_rank(int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    backend = "gloo" if mpi_through_mpi4py(config) else config.backend
    if store is not None:
        dist.init_process_group(backend, store=store, rank=rank, world_size=int(os.environ["WORLD_SIZE"]),
                                timeout=timedelta(seconds=config.timeout_s))
    else:
        dist.init_process_group(backend, timeout=timedelta(seconds=config.timeout_s))
    try:
        yield RankContext(rank, local_rank, dist.get_world_size(), device)
    finally:
        dist.destroy_process_group()


def cpu_threads_per_rank(local_ranks: int) -> int:
    return max(1, len(os.sched_getaffinity(0)) // max(1, local_ranks))


def claim_run_dir(config: RunConfig, rank: int) -> Path:
    """Rank 0 creates the run folder exclusively; everyone learns whether that worked."""
    status = [""]
    if rank == 0:
        try:
            config.run_dir.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            status[0] = f"run folder {config.run_dir} already exists; commprof never overwrites a run"
        except OSError as exc:
            status[0] = f"cannot create run folder {config.run_dir}: {exc.strerror}"
    dist.broadcast_object_list(status, src=0)
    if status[0]:
        raise RuntimeError(status[0])
    return config.run_dir


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()


def versions() -> dict[str, Any]:
    nccl = None
    if torch.cuda.is_available() and dist.is_nccl_available():
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    return {"commprof": commprof.__version__, "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": nccl, "python": platform.python_version()}
