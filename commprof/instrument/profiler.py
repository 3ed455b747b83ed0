"""torch.profiler set-up: the wait/warmup/active schedule, a script's start-up recording, and an atomic trace
writer."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from commprof.config import ProfileSchedule
from commprof.instrument.group_record import write_groups
from commprof.instrument.host_heap import HeapDuringWindow

# Both torch-tb-profiler (worker name before '.pt.trace.json') and HTA (rank from
# distributedInfo, any *.json) load this name; one file per rank.
TRACE_FILE = "rank{rank}.pt.trace.json"


def trace_path(run_dir: Path, rank: int) -> Path:
    return run_dir / TRACE_FILE.format(rank=rank)


class Profile(profile):
    """torch's profiler, less the import of torch._inductor it makes as it starts (torch 2.13 reads one setting,
    `triton.cudagraphs`, through `hasattr(torch, "_inductor")`, which imports the compiler stack: 2-3 s per rank on a
    CPU, docs/benchmarks.md). The setting concerns only code inductor compiled, and a job that compiled any has
    imported it: then torch's own start runs unchanged."""

    def prepare_trace(self) -> None:
        if "torch._inductor" in sys.modules:
            super().prepare_trace()
            return
        with _inductor_not_loaded():
            super().prepare_trace()


@contextmanager
def _inductor_not_loaded() -> Iterator[None]:
    """`torch._inductor` reads as absent, not as a module to import, unless an import of it is under way (another
    thread's, whose own modules read it as they load); every other lazy attribute as before."""
    lazy = torch.__dict__["__getattr__"]

    def getattr_(name: str):
        if name == "_inductor" and "torch._inductor" not in sys.modules:
            raise AttributeError(name)
        return lazy(name)

    setattr(torch, "__getattr__", getattr_)  # noqa: B010 (mypy refuses assigning a module function)
    try:
        yield
    finally:
        setattr(torch, "__getattr__", lazy)  # noqa: B010


def make_profiler(
    sched: ProfileSchedule | None, use_cuda: bool, run_dir: Path, rank: int, record_shapes: bool = True
) -> profile:
    """The profiler of one rank, writing its trace when the schedule's window ends; without a schedule it
    records from start to stop and writes nothing by itself (`write_trace(prof)` does). record_shapes gives
    the collective sizes (Input Dims) on the CPU-side ops; turning it off did not make the profiled steps
    measurably cheaper on CPU (benchmarks/measure/bench_overhead.py --no-record-shapes, docs/benchmarks.md)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
    if sched is None:
        return Profile(activities=activities, record_shapes=record_shapes)
    return Profile(
        activities=activities,
        # CPU ranks: the records kept away from the tensors while recorded (instrument/host_heap.py)
        schedule=HeapDuringWindow(
            schedule(wait=sched.wait, warmup=sched.warmup, active=sched.active, repeat=1), enabled=not use_cuda
        ),
        on_trace_ready=lambda prof: written(prof, run_dir, rank),
        record_shapes=record_shapes,
    )


def release(prof: profile) -> None:
    """A stopped profiler's records let go of now, not at the next garbage collection (a profile is a reference
    cycle): with record_shapes they hold a weak reference to every tensor an op took, and torch.utils.swap_tensors
    refuses a tensor that has any. Call it once the trace it was to write is written."""
    prof.profiler = None


class StartupProfile:
    """The profiler of a script's start, from before its first line to its first optimizer step (or to its end: the
    trace of a script that never steps is the run's one window).

    With record_shapes, torch's profiler keeps a weak reference to each tensor an op takes until its records are let
    go, and `torch.utils.swap_tensors` refuses a tensor that has any ("Expected no weakrefs to t1's Tensor object").
    A script that builds its model on the meta device and materializes it with `to_empty` swaps every parameter
    (under `torch.__future__.set_swap_module_params_on_conversion(True)`, and always for FSDP2's DTensor parameters),
    as `load_state_dict` and `.to()` do under that flag: each parameter was an op's input just before (its init,
    `empty_like`). So at the script's first swap the record so far is let go and the start is recorded on without
    shapes, and its swaps succeed as under torchrun; a script that never swaps keeps its start recorded with shapes
    (Gloo's collectives give their sizes there alone, docs/semantics.md)."""

    def __init__(self, use_cuda: bool, run_dir: Path, rank: int):
        self.use_cuda, self.run_dir, self.rank = use_cuda, run_dir, rank
        self.profile = make_profiler(None, use_cuda, run_dir, rank)
        self.shapes = True  # False once a swap made it record on without them
        self._swap: tuple[Callable[..., None], Callable[..., None]] | None = None  # torch's, and commprof's around it

    def start(self) -> None:
        original = torch.utils.swap_tensors

        @functools.wraps(original)
        def swap_tensors(t1: torch.Tensor, t2: torch.Tensor) -> None:
            self.without_shapes()
            original(t1, t2)

        # torch's callers look it up as torch.utils.swap_tensors at each call (nn.Module._apply, load_state_dict,
        # fully_shard's move to its device, parametrize)
        torch.utils.swap_tensors = swap_tensors
        self._swap = original, swap_tensors
        self.profile.start()

    def without_shapes(self) -> None:
        """The record so far let go (its weak references with it), the start recorded on without shapes; once."""
        if not self.shapes:
            return
        self.shapes = False
        self.profile.stop()
        release(self.profile)
        self.profile = make_profiler(None, self.use_cuda, self.run_dir, self.rank, record_shapes=False)
        self.profile.start()

    def stop(self) -> profile:
        """Stopped, torch's swap_tensors back: the profile, for `write_trace`, then `release`."""
        if self._swap is not None:
            original, ours = self._swap
            if torch.utils.swap_tensors is ours:  # unless someone replaced it since
                torch.utils.swap_tensors = original
            self._swap = None
        self.profile.stop()
        return self.profile


def written(prof: profile, run_dir: Path, rank: int) -> None:
    """The window's trace, and beside it the rank's record of which process group ran each collective (Gloo's
    ranges name none: instrument/group_record.py)."""
    write_trace(prof, trace_path(run_dir, rank))
    write_groups(run_dir, rank)


def write_trace(prof: profile, target: Path) -> None:
    """Written under a temporary name and renamed, so a crash never leaves half a trace."""
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        prof.export_chrome_trace(str(tmp))
        os.replace(tmp, target)
    except Exception as exc:  # torch reports a full disk as a failed rename of its own temporary file
        for leftover in (tmp, tmp.with_name(tmp.name + ".tmp")):
            leftover.unlink(missing_ok=True)
        free = shutil.disk_usage(target.parent).free
        raise RuntimeError(
            f"cannot write trace {target} ({free // 1024} KiB free there): {getattr(exc, 'strerror', None) or exc}"
        ) from None


SYNC_POLL_S = 1e-4


def cuda_synchronize(use_cuda: bool) -> None:
    """Wait for the GPU without blocking inside CUDA: a rank stuck in torch.cuda.synchronize() cannot run its
    SIGTERM handler (the launcher then kills it with no record of why), so poll an event instead."""
    if use_cuda:
        done = torch.cuda.Event()
        done.record()
        while not done.query():
            time.sleep(SYNC_POLL_S)
