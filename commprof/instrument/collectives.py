"""The collectives `commprof bench` and `commprof backends` run, over torch.distributed or MPI (mpi4py).

Each op fills its input with (rank + 1) so the result is known exactly and checked after every
run. Message size follows nccl-tests: all_gather counts the gathered output, reduce_scatter
the input, the others the buffer each rank holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.distributed as dist

BENCH_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int32": torch.int32,
}


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
        total = n * (n + 1) / 2

        def full(numel: int, value: float) -> torch.Tensor:
            return torch.full((numel,), value, dtype=dtype, device=device)

        if op == "all_reduce":
            return Buffers(full(count, r + 1), full(0, 0), full(count, total))
        if op == "all_gather":
            chunk = count // n
            expected = torch.cat([full(chunk, j + 1) for j in range(n)])
            return Buffers(full(chunk, r + 1), full(count, 0), expected)
        if op == "reduce_scatter":
            return Buffers(full(count, r + 1), full(count // n, 0), full(count // n, total))
        if op == "broadcast":
            return Buffers(full(count, r + 1), full(0, 0), full(count, 1))
        if op == "reduce":
            return Buffers(full(count, r + 1), full(0, 0), full(count, total) if r == 0 else None)
        if op == "all_to_all":
            chunk = count // n
            return Buffers(full(count, r + 1), full(count, 0), torch.cat([full(chunk, j + 1) for j in range(n)]))
        if op == "send_recv":
            peer = self._peer()
            return Buffers(full(count, r + 1), full(count, 0), full(count, peer + 1) if peer is not None else None)
        raise ValueError(op)

    def _peer(self) -> int | None:
        peer = self.rank + 1 if self.rank % 2 == 0 else self.rank - 1
        return peer if peer < self.size else None

    def run(self, op: str, b: Buffers) -> None:
        (self._mpi if self.backend == "mpi" else self._torch)[op](b)

    def check(self, op: str, b: Buffers) -> bool:
        if b.expected is None:
            return True
        result = b.send if op in ("all_reduce", "broadcast", "reduce") else b.recv
        return bool(torch.equal(result, b.expected))

    @property
    def _torch(self) -> dict[str, Callable[[Buffers], Any]]:
        return {
            "all_reduce": lambda b: dist.all_reduce(b.send),
            "all_gather": lambda b: dist.all_gather_into_tensor(b.recv, b.send),
            "reduce_scatter": lambda b: dist.reduce_scatter_tensor(b.recv, b.send),
            "broadcast": lambda b: dist.broadcast(b.send, src=0),
            "reduce": lambda b: dist.reduce(b.send, dst=0),
            "all_to_all": lambda b: dist.all_to_all_single(b.recv, b.send),
            "send_recv": self._torch_send_recv,
        }

    def _torch_send_recv(self, b: Buffers) -> None:
        peer = self._peer()
        if peer is None:
            return
        ops = [dist.P2POp(dist.isend, b.send, peer), dist.P2POp(dist.irecv, b.recv, peer)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()

    @property
    def _mpi(self) -> dict[str, Callable[[Buffers], Any]]:
        world, MPI = self.world, self.mpi

        def buf(t: torch.Tensor):
            return t.numpy()

        def send_recv(b: Buffers) -> None:
            peer = self._peer()
            if peer is not None:
                world.Sendrecv(buf(b.send), dest=peer, recvbuf=buf(b.recv), source=peer)

        return {
            "all_reduce": lambda b: world.Allreduce(MPI.IN_PLACE, buf(b.send)),
            "all_gather": lambda b: world.Allgather(buf(b.send), buf(b.recv)),
            "reduce_scatter": lambda b: world.Reduce_scatter_block(buf(b.send), buf(b.recv)),
            "broadcast": lambda b: world.Bcast(buf(b.send), root=0),
            "reduce": lambda b: world.Reduce(
                MPI.IN_PLACE if self.rank == 0 else buf(b.send), buf(b.send) if self.rank == 0 else None, root=0
            ),
            "all_to_all": lambda b: world.Alltoall(buf(b.send), buf(b.recv)),
            "send_recv": send_recv,
        }
