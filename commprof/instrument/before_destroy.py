"""What a script's rank measures on its process group once training is over (the link probe, the casts' cost, its
collectives' record), taken before the script destroys that group: most scripts end with
`dist.destroy_process_group()` (nanoGPT, PyTorch's tutorials), after which nothing could be measured on it. A wrapper
around torch.distributed.destroy_process_group runs `measure` first, once, when the default group is destroyed."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import torch.distributed as dist
from torch.distributed import distributed_c10d


class BeforeDestroy:
    def __init__(self, measure: Callable[[], None]):
        self.measure, self.done = measure, False
        self._original: Any = None

    def install(self) -> None:
        self._original = original = distributed_c10d.destroy_process_group
        watch = self

        @functools.wraps(original)
        def destroy_process_group(group: Any = None) -> None:
            if group is None or group is distributed_c10d.GroupMember.WORLD:
                watch.run()
            original(group)

        dist.destroy_process_group = distributed_c10d.destroy_process_group = destroy_process_group

    def run(self) -> None:
        """`measure`, once, while the default group is up; not while an exception unwinds the script (a `finally`
        that destroys the group after a failure: a peer may be gone, and the probe would wait for it)."""
        if not self.done and dist.is_initialized() and sys.exc_info()[0] is None:
            self.done = True
            self.measure()

    def uninstall(self) -> None:
        if self._original is not None:
            dist.destroy_process_group = distributed_c10d.destroy_process_group = self._original
