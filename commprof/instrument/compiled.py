"""torch.compile in a user's script: what it compiled and how (a wrapper around `torch.compile`, which
`nn.Module.compile` calls too), the steps in which Dynamo compiled (its count of frames converted grew: a first
compile, or a recompile), and how Dynamo's DDPOptimizer split each compiled graph at DDP's buckets so that each
bucket's all-reduce can start while the backward goes on (a wrapper around its `compile_fn`). Nothing is watched
until the script calls torch.compile."""

from __future__ import annotations

import functools
import sys
from typing import Any

import torch

from commprof.results.run_record import Compiled

MAX_STEPS = 64  # compile steps listed; the others counted
MAX_GRAPHS = 16


def described(target: Any) -> str:
    """What was compiled, as the script wrote it: its model's class, DDP around a model, or a function's name."""
    owner = getattr(target, "__self__", None)  # nn.Module.compile compiles the module's bound _call_impl
    if isinstance(owner, torch.nn.Module):
        target = owner
    if isinstance(target, torch.nn.parallel.DistributedDataParallel):
        return f"DistributedDataParallel({type(target.module).__name__})"
    if isinstance(target, torch.nn.Module):
        return type(target).__name__
    return getattr(target, "__qualname__", None) or type(target).__name__


def backend_name(backend: Any) -> str:
    return backend if isinstance(backend, str) else getattr(backend, "__name__", None) or type(backend).__name__


class CompileWatch:
    def __init__(self) -> None:
        self.what: list[str] = []
        self.backend, self.mode = "", None
        self.steps: list[int] = []
        self.steps_more = 0
        self.frames = 0
        self.graphs: list[list[int]] = []
        self.cap_bytes: int | None = None
        self._original: Any = None
        self._split_original: Any = None

    def install(self) -> None:
        self._original = original = torch.compile
        watch = self

        @functools.wraps(original)
        def compile(model: Any = None, *args: Any, **kwargs: Any) -> Any:
            if not watch.what:
                watch._watch_splits()
                watch.backend = backend_name(kwargs.get("backend", "inductor"))
                watch.mode = kwargs.get("mode")
            watch.what.append(described(model) if model is not None else "a function (as a decorator)")
            return original(model, *args, **kwargs)

        torch.compile = compile

    def uninstall(self) -> None:
        if self._original is not None:
            torch.compile = self._original
        if self._split_original is not None:
            from torch._dynamo.backends import distributed

            setattr(distributed.DDPOptimizer, "compile_fn", self._split_original)  # noqa: B010

    def step_ended(self, step: int) -> None:
        """After each step: the step compiled where Dynamo converted a frame since the last."""
        if not self.what:
            return
        utils = sys.modules.get("torch._dynamo.utils")
        frames = utils.counters["frames"]["total"] if utils is not None else 0
        if frames > self.frames:
            if len(self.steps) < MAX_STEPS:
                self.steps.append(step)
            else:
                self.steps_more += 1
            self.frames = frames

    def record(self) -> Compiled | None:
        """None where nothing was compiled: torch.compile never called, or only on what never ran (a library's
        decorated function: DeepSpeed's Muon optimizer compiles one at import)."""
        if not self.what or not (self.steps or self.steps_more or self.graphs):
            return None
        return Compiled(
            what=self.what[0],
            backend=self.backend,
            mode=self.mode,
            steps=self.steps,
            steps_more=self.steps_more,
            graphs=self.graphs,
            bucket_cap_bytes=self.cap_bytes,
        )

    def _watch_splits(self) -> None:
        try:
            from torch._dynamo.backends import distributed
        except ImportError:  # a torch without Dynamo's DDPOptimizer: the compile is still named
            return
        self._split_original = original = distributed.DDPOptimizer.compile_fn
        watch = self

        def compile_fn(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            compiled = original(optimizer, *args, **kwargs)
            buckets = getattr(optimizer, "buckets", None) or []
            if buckets and len(watch.graphs) < MAX_GRAPHS:
                watch.graphs.append([bucket.size for bucket in reversed(buckets)])  # DDP's order: the last layers first
                watch.cap_bytes = optimizer.bucket_bytes_cap
            return compiled

        setattr(distributed.DDPOptimizer, "compile_fn", compile_fn)  # noqa: B010 - a method replaced on its class
