"""The collectives `commprof bench` times and `commprof backends` tries, named as the analysis names them
(trace/rules.py: a paired send and receive is one send_recv), over torch.distributed or MPI (mpi4py): one table.

Each op fills its input with (rank + 1) so the result is known exactly and checked after every run. Message size
follows nccl-tests: all_gather and gather count the gathered output, reduce_scatter and scatter the input, the others
the buffer each rank holds. A Comm builds its ops once: a timed loop only calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from commprof.plans import BENCH_OPS

MATRIX_OPS = (*BENCH_OPS, "gather", "scatter", "barrier")  # what `commprof backends` tries
DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int32": torch.int32,
}
IN_PLACE = ("all_reduce", "broadcast", "reduce")  # the result is in the send buffer


@dataclass
class Buffers:
    send: torch.Tensor
    recv: torch.Tensor
    expected: torch.Tensor | None  # what `recv` (or `send` for in-place ops) must hold afterwards on this rank


class Comm:
    """One process group's collectives: torch.distributed, or MPI through mpi4py."""

    def __init__(self, backend: str):
        self.backend = backend
        if backend == "mpi":
            from mpi4py import MPI

            self.mpi, self.world = MPI, MPI.COMM_WORLD
            self.rank, self.size = self.world.Get_rank(), self.world.Get_size()
        else:
            self.rank, self.size = dist.get_rank(), dist.get_world_size()
        peer = self.rank + 1 if self.rank % 2 == 0 else self.rank - 1
        self.peer = peer if peer < self.size else None  # send_recv pairs ranks 0-1, 2-3, ...
        self.ops: dict[str, Callable[[Buffers], Any]] = self._mpi() if backend == "mpi" else self._torch()

    def barrier(self) -> None:
        self.world.Barrier() if self.backend == "mpi" else dist.barrier()

    def all_gather_object(self, value: Any) -> list[Any]:
        if self.backend == "mpi":
            return self.world.allgather(value)
        gathered: list[Any] = [None] * self.size
        dist.all_gather_object(gathered, value)
        return gathered

    def buffers(self, op: str, nbytes: int, dtype: torch.dtype, device: torch.device) -> Buffers:
        n, r = self.size, self.rank
        count = max(n, nbytes // torch.tensor([], dtype=dtype).element_size())
        count -= count % n  # divisible into n chunks
        chunk, total = count // n, n * (n + 1) / 2

        def full(numel: int, value: float) -> torch.Tensor:
            return torch.full((numel,), value, dtype=dtype, device=device)

        def each_rank() -> torch.Tensor:  # rank j's chunk holds j + 1
            return torch.cat([full(chunk, j + 1) for j in range(n)])

        if op == "all_reduce":
            return Buffers(full(count, r + 1), full(0, 0), full(count, total))
        if op == "all_gather":
            return Buffers(full(chunk, r + 1), full(count, 0), each_rank())
        if op == "reduce_scatter":
            return Buffers(full(count, r + 1), full(chunk, 0), full(chunk, total))
        if op == "broadcast":
            return Buffers(full(count, r + 1), full(0, 0), full(count, 1))
        if op == "reduce":
            return Buffers(full(count, r + 1), full(0, 0), full(count, total) if r == 0 else None)
        if op == "all_to_all":
            return Buffers(full(count, r + 1), full(count, 0), each_rank())
        if op == "send_recv":
            peer = self.peer
            return Buffers(full(count, r + 1), full(count, 0), full(count, peer + 1) if peer is not None else None)
        if op == "gather":
            return Buffers(full(chunk, r + 1), full(count if r == 0 else 0, 0), each_rank() if r == 0 else None)
        if op == "scatter":
            return Buffers(each_rank() if r == 0 else full(0, 0), full(chunk, 0), full(chunk, r + 1))
        if op == "barrier":
            return Buffers(full(0, 0), full(0, 0), None)
        raise ValueError(op)

    def run(self, op: str, b: Buffers) -> None:
        self.ops[op](b)

    def check(self, op: str, b: Buffers) -> bool:
        if b.expected is None:
            return True
        result = b.send if op in IN_PLACE else b.recv
        return bool(torch.equal(result, b.expected))

    def _torch(self) -> dict[str, Callable[[Buffers], Any]]:
        root = self.rank == 0

        def send_recv(b: Buffers) -> None:
            if self.peer is None:
                return
            ops = [dist.P2POp(dist.isend, b.send, self.peer), dist.P2POp(dist.irecv, b.recv, self.peer)]
            for request in dist.batch_isend_irecv(ops):
                request.wait()

        return {
            "all_reduce": lambda b: dist.all_reduce(b.send),
            "all_gather": lambda b: dist.all_gather_into_tensor(b.recv, b.send),
            "reduce_scatter": lambda b: dist.reduce_scatter_tensor(b.recv, b.send),
            "broadcast": lambda b: dist.broadcast(b.send, src=0),
            "reduce": lambda b: dist.reduce(b.send, dst=0),
            "all_to_all": lambda b: dist.all_to_all_single(b.recv, b.send),
            "send_recv": send_recv,
            "gather": lambda b: dist.gather(b.send, list(b.recv.chunk(self.size)) if root else None, dst=0),
            "scatter": lambda b: dist.scatter(b.recv, list(b.send.chunk(self.size)) if root else None, src=0),
            "barrier": lambda b: dist.barrier(),
        }

    def _mpi(self) -> dict[str, Callable[[Buffers], Any]]:
        world, MPI, root = self.world, self.mpi, self.rank == 0

        def buf(t: torch.Tensor):
            return t.numpy()

        def send_recv(b: Buffers) -> None:
            if self.peer is not None:
                world.Sendrecv(buf(b.send), dest=self.peer, recvbuf=buf(b.recv), source=self.peer)

        return {
            "all_reduce": lambda b: world.Allreduce(MPI.IN_PLACE, buf(b.send)),
            "all_gather": lambda b: world.Allgather(buf(b.send), buf(b.recv)),
            "reduce_scatter": lambda b: world.Reduce_scatter_block(buf(b.send), buf(b.recv)),
            "broadcast": lambda b: world.Bcast(buf(b.send), root=0),
            "reduce": lambda b: world.Reduce(
                MPI.IN_PLACE if root else buf(b.send), buf(b.send) if root else None, root=0
            ),
            "all_to_all": lambda b: world.Alltoall(buf(b.send), buf(b.recv)),
            "send_recv": send_recv,
            "gather": lambda b: world.Gather(buf(b.send), buf(b.recv) if root else None, root=0),
            "scatter": lambda b: world.Scatter(buf(b.send) if root else None, buf(b.recv), root=0),
            "barrier": lambda b: world.Barrier(),
        }
