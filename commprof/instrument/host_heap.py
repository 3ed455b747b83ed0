"""Keep the profiler's records from fragmenting a CPU rank's heap while they are recorded.

The profiler allocates many small, long-lived records between a CPU model's tensors. With glibc's adaptive
defaults they splinter the freed tensor blocks, each step's tensors land on fresh heap pages the kernel must
fault in, and the profiled steps of the built-in mlstm ran 2.2 to 4.2 times as long as the unprofiled ones
(docs/benchmarks.md, "What the profiler's cost is made of"). For the profiler's window only, blocks of 128 KiB
and more get their own mapping, away from the records; after it, the heap takes them again. The unprofiled
steps keep the job's own allocator behaviour, so the headline stays the job's step."""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Callable

from torch.profiler import ProfilerAction

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
OWN_MAPPING_FROM = 128 << 10  # glibc's initial threshold
HEAP_UP_TO = 32 << 20  # the largest threshold glibc accepts on 64-bit, where its adaptive one ends up


def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's mallopt, or None: not Linux, another C library, or the user tunes malloc (MALLOC_*) themselves."""
    if not sys.platform.startswith("linux") or any(k.startswith("MALLOC_") for k in os.environ):
        return None
    try:
        return ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return None


class HeapDuringWindow:
    """A profiler schedule, wrapped: large blocks get their own mapping from the window's first traced step until
    the window closes."""

    def __init__(self, schedule: Callable[[int], ProfilerAction], enabled: bool):
        self.schedule = schedule
        self.mallopt = _mallopt() if enabled else None
        self.inside = False

    def __call__(self, step: int) -> ProfilerAction:
        action = self.schedule(step)
        inside = action != ProfilerAction.NONE
        if self.mallopt is not None and inside != self.inside:
            self.mallopt(M_MMAP_THRESHOLD, OWN_MAPPING_FROM if inside else HEAP_UP_TO)
        self.inside = inside
        return action
