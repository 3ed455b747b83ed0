"""The backend commprof was asked for (`compare --backends`, `run --backend` named on the command line), given to a
user's script's init_process_group in place of its own, as DDP's arguments are: the script is run unmodified on
each backend compared."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch.distributed as dist
from torch.distributed import distributed_c10d


class ForcedBackend:
    def __init__(self, backend: str):
        self.backend = backend
        self.asked: str | None = None  # what the script's own call named
        self._original: Any = None

    def install(self) -> None:
        self._original = original = distributed_c10d.init_process_group
        signature, forced = inspect.signature(original), self

        @functools.wraps(original)
        def init_process_group(*args: Any, **kwargs: Any) -> None:
            bound = signature.bind(*args, **kwargs)
            forced.asked = str(bound.arguments.get("backend"))
            bound.arguments["backend"] = forced.backend
            return original(*bound.args, **bound.kwargs)

        dist.init_process_group = distributed_c10d.init_process_group = init_process_group

    def uninstall(self) -> None:
        if self._original is not None:
            dist.init_process_group = distributed_c10d.init_process_group = self._original
