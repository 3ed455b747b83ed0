"""The collectives a rank runs over MPI through mpi4py (DDP's gradient buckets, instrument/ddp.mpi_allreduce_hook), as
its hang watch tells them (instrument/hang_watch.py). torch's Flight Recorder records only torch.distributed's
collectives: without this record, a rank waiting in an MPI all-reduce would be written as outside any collective, and
nothing would bound the wait (MPI has no timeout; the launch's deadline, launch/deadline.py, acts on it from here).

Each rank numbers its MPI collectives from 1, as torch numbers a process group's, and keeps the last RECENT."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from commprof.results.hang import MPI_GROUP_DESC, RECENT, EnteredCollective

GROUP = "COMM_WORLD"  # the one communicator commprof's MPI collectives use
# torch's names for a dtype, as its Flight Recorder writes them (c10's ScalarType)
_TORCH_NAMES = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16"}

_lock = threading.Lock()
_recent: list[EnteredCollective] = []  # this process's last RECENT, oldest first
_entered = 0  # how many it has entered


@contextmanager
def entered(op: str, tensor: torch.Tensor) -> Iterator[None]:
    """While the block runs, this rank is inside MPI collective `op` on `tensor`; once it returns, the collective
    is completed (one that raised stays entered: the rank is leaving)."""
    global _entered
    with _lock:
        _entered += 1
        call = EnteredCollective(
            group=GROUP,
            group_desc=MPI_GROUP_DESC,
            seq=_entered,
            op=op,
            sizes=[list(tensor.shape)],
            dtypes=[_TORCH_NAMES.get(tensor.dtype, str(tensor.dtype).removeprefix("torch."))],
            completed=False,
            entered_s=time.time(),
        )
        _recent[:] = [*_recent[-(RECENT - 1) :], call]
    yield
    with _lock:
        _recent[:] = [dataclasses.replace(c, completed=True) if c is call else c for c in _recent]


def recent() -> list[EnteredCollective]:
    """The last collectives this rank entered over MPI, oldest first (empty where it entered none)."""
    with _lock:
        return list(_recent)
