"""Who this process is when an MPI launcher (mpirun, mpiexec, srun with PMI) started it.

Open MPI exports OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}; MPICH and Intel MPI export
PMI_RANK / PMI_SIZE and MPI_LOCALRANKID / MPI_LOCALNRANKS. Launchers that give no local rank (plain
PMI, some srun --mpi modes) leave it to MPI itself: the ranks that share this node's memory."""

from __future__ import annotations

from typing import Callable, Mapping

from commprof.errors import UsageError

RANK_VARS = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
)


def started_by_mpi_launcher(env: Mapping[str, str]) -> bool:
    """More than one process, each a rank, started by an MPI launcher (not commprof's own --backend mpi
    job). `srun --ntasks-per-node=1` with PMI exports PMI_RANK too, but there each task is one node's
    commprof, which starts that node's ranks itself."""
    if env.get("SLURM_STEP_NUM_TASKS") and env.get("SLURM_STEP_NUM_TASKS") == env.get("SLURM_STEP_NUM_NODES"):
        return False
    return any(rank in env and size in env and env[size] != "1" for rank, size, _, _ in RANK_VARS)


def identity_from_env(
    env: Mapping[str, str], node_local: Callable[[], tuple[int, int]] | None = None
) -> dict[str, str]:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from whichever MPI launcher started us;
    `node_local()` gives (local rank, local size) when the launcher does not say."""
    for rank, size, local_rank, local_size in RANK_VARS:
        if rank in env and size in env:
            if local_rank in env and local_size in env:
                local = (env[local_rank], env[local_size])
            elif node_local is not None:
                local_rank_of, local_size_of = node_local()
                local = (str(local_rank_of), str(local_size_of))
            else:
                raise UsageError(
                    f"the MPI launcher set {rank} but no local rank ({local_rank}); commprof cannot tell "
                    "which GPU is this rank's"
                )
            return {"RANK": env[rank], "WORLD_SIZE": env[size], "LOCAL_RANK": local[0], "LOCAL_WORLD_SIZE": local[1]}
    raise UsageError("not started by an MPI launcher (no OMPI_COMM_WORLD_RANK or PMI_RANK in the environment)")


def node_local_from_mpi() -> tuple[int, int]:
    """This process's rank and the number of ranks among those that share its node (MPI-3 shared memory)."""
    from mpi4py import MPI

    local = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return local.Get_rank(), local.Get_size()
    finally:
        local.Free()
