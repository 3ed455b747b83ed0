"""What every worker process needs: its identity, the process group, the run folder, errors."""

from __future__ import annotations

import faulthandler
import functools
import os
import platform
import resource
import signal
import socket
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
from commprof.analysis.digest import own_digest, write_digests
from commprof.config import RunConfig
from commprof.instrument.hang_watch import account_at_exit
from commprof.instrument.profiler import trace_path
from commprof.launch.atomic import write_bytes_atomic
from commprof.launch.faults import INTERRUPTED_MESSAGE, STOPPED_MESSAGE
from commprof.results.step_ledger import ledger_path
from commprof.worker.torch_settings import configure_rank


@dataclass(frozen=True)
class RankContext:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device


class RankStopped(BaseException):
    """The launcher stopped this rank (SIGTERM), normally because another rank failed, or Ctrl-C (SIGINT) did."""


def raise_stopped(signum: int, frame: Any) -> None:
    """SIGTERM (and SIGINT) handler: the launcher stopped this rank; unwind, so the profiler writes its trace."""
    # Launchers may signal more than once, and Ctrl-C reaches a rank twice (from the terminal, and forwarded by
    # the launcher); the first stop must be able to finish unwinding (the launcher's SIGKILL after its grace
    # period still bounds it).
    ignore_stops()
    raise RankStopped(INTERRUPTED_MESSAGE if signum == signal.SIGINT else STOPPED_MESSAGE)


def ignore_stops() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def exit_on_error(entry: Callable[..., Any]) -> Callable[..., Any]:
    """On any error, record it for the launcher (error.json) and leave at once.

    SIGTERM and SIGINT become an exception, so a rank the launcher stops (or Ctrl-C) still unwinds: the profiler
    writes the trace it was recording. os._exit skips the C++ teardown of a process group whose peers are
    gone, which otherwise aborts noisily after the real error has been recorded."""

    @functools.wraps(entry)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        faulthandler.enable(all_threads=True)  # a crash leaves its Python stack in the worker's log
        signal.signal(signal.SIGTERM, raise_stopped)
        signal.signal(signal.SIGINT, raise_stopped)
        # stopped while blocked in C++ (a collective whose peer failed), the rank may be killed before the handler
        # runs: its stack goes to its log first (launch/faults.main_thread_site)
        faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
        try:
            return entry(*args, **kwargs)
        except BaseException as exc:
            ignore_stops()  # leaving anyway: a stop must not cut the record short
            try:
                account_at_exit(exc)
                get_error_handler().record_exception(error_to_record(exc))
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(1)

    return wrapper


def error_to_record(exc: BaseException) -> BaseException:
    """The error this rank failed with. A stop that came while the rank was already unwinding from an error of
    its own (a collective timed out, and closing the process group made a peer crash) is not the cause: the
    error it interrupted is."""
    while isinstance(exc, RankStopped) and exc.__context__ is not None:
        exc = exc.__context__
    return exc


def mpi_through_mpi4py(config: RunConfig) -> bool:
    """torch has no native MPI backend here: DDP gets a Gloo group and its gradients go over mpi4py."""
    return config.backend == "mpi" and not dist.is_mpi_available()


@contextmanager
def distributed(config: RunConfig, store: Any = None) -> Iterator[RankContext]:
    """Join the process group (rank and world from the launcher's environment; `store` from MPI bootstrap)."""
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    device = (
        torch.device("cuda", gpu_index(local_rank, torch.cuda.device_count()))
        if config.device == "cuda"
        else torch.device("cpu")
    )
    configure_rank(device, config.tf32)
    backend = "gloo" if mpi_through_mpi4py(config) else config.backend
    if store is not None:
        dist.init_process_group(
            backend,
            store=store,
            rank=rank,
            world_size=int(os.environ["WORLD_SIZE"]),
            timeout=timedelta(seconds=config.timeout_s),
        )
    else:
        dist.init_process_group(backend, timeout=timedelta(seconds=config.timeout_s))
    try:
        yield RankContext(rank, local_rank, dist.get_world_size(), device)
    finally:
        dist.destroy_process_group()


def gpu_index(local_rank: int, visible: int) -> int:
    """This rank's GPU: the one of its local rank, or the only one it sees when the launcher bound one GPU to
    each rank (CUDA_VISIBLE_DEVICES per rank)."""
    if visible == 1:
        return 0
    if local_rank < visible:
        return local_rank
    raise RuntimeError(
        f"local rank {local_rank} sees {visible} GPU(s): expected one GPU per local rank, or exactly one"
    )


OWNER_FILE = ".launch"  # while ranks claim the run folder: the launch id of the rank that created it


def claim_run_dir(config: RunConfig, rank: int, local_rank: int | None = None) -> Path:
    """Rank 0 creates the run folder exclusively, marked with its launch id while the others look. Where traces/
    is node-local, the first rank of every other node creates that node's folder; a folder another run left
    there is never written into. Every rank learns whether that worked, so all fail together or none does."""
    local_rank = int(os.environ.get("LOCAL_RANK", rank)) if local_rank is None else local_rank
    status, created = "", False
    if rank == 0:
        status = _create_run_dir(config.run_dir, config.launch_id)
        created = not status
    owner = [config.launch_id]
    dist.broadcast_object_list(owner, src=0)
    if rank != 0 and local_rank == 0:
        created = not config.run_dir.exists()
        status = _create_run_dir(config.run_dir, owner[0]) if created else _check_owner(config.run_dir, owner[0])
    statuses: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(statuses, status)
    if created:
        (config.run_dir / OWNER_FILE).unlink(missing_ok=True)
    problems = [s for s in statuses if s]
    if problems:
        raise RuntimeError(problems[0])
    return config.run_dir


def _create_run_dir(run_dir: Path, launch_id: str) -> str:
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
        (run_dir / OWNER_FILE).write_text(launch_id)
    except FileExistsError:
        return f"run folder {run_dir} already exists; commprof never overwrites a run"
    except OSError as exc:
        return f"cannot create run folder {run_dir}: {exc.strerror}"
    return ""


def _check_owner(run_dir: Path, launch_id: str) -> str:
    """On another node the folder exists: the one rank 0 just made (a shared file system), or another run's."""
    marker = run_dir / OWNER_FILE
    if not marker.is_file() or marker.read_text() != launch_id:
        return (
            f"run folder {run_dir} on {socket.gethostname()} already exists from another run; commprof never "
            "overwrites a run"
        )
    return ""


def peak_memory_mb(device: torch.device) -> dict[str, float]:
    """On a GPU, the most memory this rank's tensors took and what PyTorch's caching allocator held; on CPU, the
    process's peak resident set. MiB."""
    if device.type != "cuda":
        return {"rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # KiB on Linux
    return {
        "allocated": torch.cuda.max_memory_allocated(device) / 2**20,
        "reserved": torch.cuda.max_memory_reserved(device) / 2**20,
    }


def tf32_settings() -> dict[str, bool]:
    return {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()


def versions() -> dict[str, Any]:
    nccl = None
    if torch.cuda.is_available() and dist.is_nccl_available():
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    return {
        "commprof": commprof.__version__,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl,
        "python": platform.python_version(),
    }


def gather_digests(run_dir: Path, rank: int, world: int, own_group: bool = False) -> None:
    """On a job over several nodes, every rank digests its own trace where it wrote it, and rank 0 keeps the
    digests of the ranks whose traces its node cannot see (node-local traces folders), and their whole-run records
    (`rank<N>.ledger.json`, fixed in size, written before this): the report covers every rank, and the analysis is
    spread over the nodes. A collective: every rank calls it. `own_group`: over a CPU group of its own (a script's
    group may be NCCL's), made only when a job spans nodes: a group made and destroyed at once can close its
    connections while a peer still makes them."""
    if world == int(os.environ.get("LOCAL_WORLD_SIZE", world)):
        return
    group = dist.new_group(backend="gloo") if own_group else None
    gathered: list[Any] | None = [None] * world if rank == 0 else None
    ledger = ledger_path(run_dir, rank)
    own = (own_digest(trace_path(run_dir, rank)), ledger.read_bytes() if ledger.exists() else None)
    dist.gather_object(own, gathered, dst=0, group=group)
    if gathered is None:
        return
    elsewhere = {r: sent for r, sent in enumerate(gathered) if sent is not None and not trace_path(run_dir, r).exists()}
    write_digests(run_dir, {r: digest for r, (digest, _) in elsewhere.items() if digest is not None})
    for r, (_, record) in enumerate(gathered):
        if record is not None and not ledger_path(run_dir, r).exists():
            write_bytes_atomic(ledger_path(run_dir, r), record)
