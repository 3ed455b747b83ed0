"""Try each collective once with 2 ranks and check the values received: the live capability matrix."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.distributed as dist

MATRIX_OPS = (
    "send",
    "recv",
    "broadcast",
    "all_reduce",
    "reduce",
    "all_gather",
    "gather",
    "scatter",
    "reduce_scatter",
    "all_to_all",
    "barrier",
)
N = 4  # elements per rank


def _value(rank: int, device: torch.device) -> torch.Tensor:
    return torch.full((N,), float(rank + 1), device=device)


def torch_ops(rank: int, world: int, device: torch.device) -> dict[str, Callable[[], bool]]:
    """Each returns whether this rank's result is right; raising means the backend refused."""
    total = world * (world + 1) / 2
    mine = lambda: _value(rank, device)  # noqa: E731
    empty = lambda: torch.zeros(N, device=device)  # noqa: E731

    def send() -> bool:
        if rank == 0:
            dist.send(mine(), dst=1)
        elif rank == 1:
            dist.recv(empty(), src=0)
        return True

    def recv() -> bool:
        if rank == 1:
            out = empty()
            dist.recv(out, src=0)
            return bool((out == 1).all())
        if rank == 0:
            dist.send(mine(), dst=1)
        return True

    def broadcast() -> bool:
        t = mine()
        dist.broadcast(t, src=0)
        return bool((t == 1).all())

    def all_reduce() -> bool:
        t = mine()
        dist.all_reduce(t)
        return bool((t == total).all())

    def reduce() -> bool:
        t = mine()
        dist.reduce(t, dst=0)
        return rank != 0 or bool((t == total).all())

    def all_gather() -> bool:
        out = [empty() for _ in range(world)]
        dist.all_gather(out, mine())
        return all(bool((o == j + 1).all()) for j, o in enumerate(out))

    def gather() -> bool:
        out = [empty() for _ in range(world)] if rank == 0 else None
        dist.gather(mine(), gather_list=out, dst=0)
        return out is None or all(bool((o == j + 1).all()) for j, o in enumerate(out))

    def scatter() -> bool:
        out = empty()
        dist.scatter(out, scatter_list=[_value(j, device) for j in range(world)] if rank == 0 else None, src=0)
        return bool((out == rank + 1).all())

    def reduce_scatter() -> bool:
        out = empty()
        dist.reduce_scatter(out, [mine() for _ in range(world)])
        return bool((out == total).all())

    def all_to_all() -> bool:
        out = [empty() for _ in range(world)]
        dist.all_to_all(out, [mine() for _ in range(world)])
        return all(bool((o == j + 1).all()) for j, o in enumerate(out))

    def barrier() -> bool:
        dist.barrier()
        return True

    return {name: fn for name, fn in locals().items() if name in MATRIX_OPS}


def mpi_ops(world_comm: Any) -> dict[str, Callable[[], bool]]:
    """The same checks over MPI (mpi4py, CPU memory)."""
    import numpy as np
    from mpi4py import MPI

    rank, world = world_comm.Get_rank(), world_comm.Get_size()
    total = world * (world + 1) / 2
    mine = lambda: np.full(N, float(rank + 1))  # noqa: E731
    empty = lambda: np.zeros(N)  # noqa: E731

    def send() -> bool:
        if rank == 0:
            world_comm.Send(mine(), dest=1)
        elif rank == 1:
            world_comm.Recv(empty(), source=0)
        return True

    def recv() -> bool:
        out = empty()
        if rank == 0:
            world_comm.Send(mine(), dest=1)
        elif rank == 1:
            world_comm.Recv(out, source=0)
        return rank != 1 or bool((out == 1).all())

    def collective(
        call: Callable[[Any, Any], object], out_len: int, check: Callable[[Any], bool]
    ) -> Callable[[], bool]:
        def run() -> bool:
            out = np.zeros(out_len)
            call(mine(), out)
            return check(out)

        return run

    gathered = lambda out: all((out[j * N : (j + 1) * N] == j + 1).all() for j in range(world))  # noqa: E731
    return {
        "send": send,
        "recv": recv,
        "broadcast": collective(
            lambda s, o: (o.__setitem__(slice(None), s), world_comm.Bcast(o, root=0)), N, lambda o: bool((o == 1).all())
        ),
        "all_reduce": collective(
            lambda s, o: world_comm.Allreduce(s, o, op=MPI.SUM), N, lambda o: bool((o == total).all())
        ),
        "reduce": collective(
            lambda s, o: world_comm.Reduce(s, o if rank == 0 else None, op=MPI.SUM, root=0),
            N,
            lambda o: rank != 0 or bool((o == total).all()),
        ),
        "all_gather": collective(lambda s, o: world_comm.Allgather(s, o), N * world, gathered),
        "gather": collective(
            lambda s, o: world_comm.Gather(s, o if rank == 0 else None, root=0),
            N * world,
            lambda o: rank != 0 or gathered(o),
        ),
        "scatter": collective(
            lambda s, o: world_comm.Scatter(
                np.concatenate([np.full(N, j + 1.0) for j in range(world)]) if rank == 0 else None, o[:N], root=0
            ),
            N,
            lambda o: bool((o[:N] == rank + 1).all()),
        ),
        "reduce_scatter": collective(
            lambda s, o: world_comm.Reduce_scatter_block(np.tile(s, world), o[:N], op=MPI.SUM),
            N,
            lambda o: bool((o == total).all()),
        ),
        "all_to_all": collective(lambda s, o: world_comm.Alltoall(np.tile(s, world), o), N * world, gathered),
        "barrier": lambda: world_comm.Barrier() or True,
    }
