"""`mpirun -n N commprof run ...`: every process the MPI launcher started is one rank.

The rank, world size and local rank come from the launcher's environment (mpi_train.RANK_VARS);
rank 0 opens a torch TCPStore on a port the OS picks and tells the others, with the run id, over
MPI (mpi4py). Rank 0 writes the report; every rank writes its trace."""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from commprof.errors import UsageError, what_went_wrong
from commprof.worker.mpi_identity import identity_from_env, node_local_from_mpi


def run_as_mpi_rank(request, probe) -> tuple[object, Path] | None:
    """Join the job as this process's rank; rank 0 returns (config, run folder) to report on."""
    import torch.distributed as dist

    from commprof.launch.resolve import new_run_id
    from commprof.worker.run import run_worker

    try:
        from mpi4py import MPI
    except ImportError:
        raise UsageError(
            "started by an MPI launcher: commprof needs mpi4py to join its ranks; pip install 'commprof[mpi]'"
        ) from None
    identity = identity_from_env(os.environ, node_local_from_mpi)
    os.environ.update(identity)
    rank, world = int(identity["RANK"]), int(identity["WORLD_SIZE"])
    local = int(identity["LOCAL_WORLD_SIZE"])
    if world % local:
        raise UsageError(
            f"the MPI launcher started {world} ranks, {local} on this node: commprof needs the same "
            "number on every node"
        )
    if request.script:
        return _script_rank(request, probe, MPI.COMM_WORLD, rank, world, local)
    store = None
    if rank == 0:
        store = dist.TCPStore(
            socket.gethostname(),
            0,
            world,
            is_master=True,
            timeout=timedelta(seconds=request.timeout_s),
            wait_for_workers=False,
        )
    host, port, run_id = MPI.COMM_WORLD.bcast(
        (socket.gethostname(), store.port, request.run_id or new_run_id()) if store is not None else None, root=0
    )
    if rank != 0:
        store = dist.TCPStore(host, port, world, is_master=False, timeout=timedelta(seconds=request.timeout_s))
    config = _one_config(
        MPI.COMM_WORLD, rank, lambda: rank_config(request, probe, world, local, f"{host}:{port}", run_id)
    )
    with tempfile.TemporaryDirectory(prefix="commprof-progress-") as tmp:
        try:
            result = run_worker(config, str(Path(tmp) / "progress.json"), store)
        except Exception as exc:  # one line, then leave at once, as the elastic workers do (rank.exit_on_error)
            print(
                f"error: rank {rank} on {socket.gethostname()} failed: "
                f"{what_went_wrong(str(exc)) or type(exc).__name__}",
                file=sys.stderr,
                flush=True,
            )
            os._exit(1)
    return (config, Path(result["run_dir"])) if rank == 0 else None


def _one_config(comm, rank: int, resolve_it):
    """The job's RunConfig, resolved once on rank 0 (before any rank creates the run folder) and sent to all: a
    refusal reaches every rank as the same one line."""
    from commprof.config import RunConfig
    from commprof.render.failure_words import error_text

    answer = None
    if rank == 0:
        try:
            answer = ("config", resolve_it().to_dict())
        except UsageError as exc:
            answer = ("refused", error_text(exc))
    kind, value = comm.bcast(answer, root=0)
    if kind == "refused":
        raise UsageError(value)
    return RunConfig.from_dict(value)


def rank_config(request, probe, world: int, local: int, endpoint: str, run_id: str):
    """The job's RunConfig as the MPI launcher laid it out: `local` ranks on each node. A site that binds one GPU
    to each rank (CUDA_VISIBLE_DEVICES per rank) shows each process a single GPU: that is one GPU per rank."""
    from commprof.launch.resolve import resolve

    cuda = request.device == "cuda" or (request.device == "auto" and probe.cuda_available)
    if cuda and probe.gpu_count == 1:
        probe = dataclasses.replace(probe, gpu_count=local)
    sized = dataclasses.replace(
        request,
        run_id=run_id,
        nodes=world // local,
        rdzv_endpoint=endpoint,
        **({"gpus": local} if cuda else {"procs": local}),
    )
    return resolve(sized, probe, env={}, launching=False)  # the MPI launcher, not SLURM, placed the ranks


def _script_rank(request, probe, comm, rank: int, world: int, local: int) -> tuple[object, Path] | None:
    """The user's script as this MPI rank: it initializes torch.distributed itself, from MASTER_ADDR and a port
    rank 0 found free; rank 0 completes run.json once every rank has ended."""
    import torch.distributed as dist

    from commprof.launch.resolve import new_run_id
    from commprof.launch.script_run import finish_script_run
    from commprof.worker.script import run_rank
    from commprof.worker.script_end import OWN_STORE_VARIABLE

    chosen: tuple[str, int, str, int] | None = None
    own_store = None
    if rank == 0:
        with socket.socket() as probe_socket:
            probe_socket.bind(("", 0))
            free_port = probe_socket.getsockname()[1]
        # commprof's own store, where the ranks meet once their scripts returned: the script's (at MASTER_PORT) goes
        # with the script's process group
        own_store = dist.TCPStore(socket.gethostname(), 0, is_master=True, wait_for_workers=False)
        chosen = (socket.gethostname(), free_port, request.run_id or new_run_id(), own_store.port)
    host, port, run_id, store_port = comm.bcast(chosen, root=0)
    os.environ.update(MASTER_ADDR=host, MASTER_PORT=str(port), **{OWN_STORE_VARIABLE: f"{host}:{store_port}"})
    config = _one_config(comm, rank, lambda: rank_config(request, probe, world, local, f"{host}:{port}", run_id))
    with tempfile.TemporaryDirectory(prefix="commprof-progress-") as tmp:
        code = run_rank(config, Path(tmp) / "progress.json")
    if any(comm.allgather(code)):  # each failed rank has said why, in one line
        sys.stdout.flush()
        os._exit(code or 1)
    if rank != 0:
        return None
    finish_script_run(config.run_dir, config.launch_id)
    return config, config.run_dir
