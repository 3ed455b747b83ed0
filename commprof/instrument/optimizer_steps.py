"""A script's step ends where its optimizer's `step()` returns: after the optimizer's own work and every hook of its
step, its own and the global ones, whenever they were registered. torch's global post-step hook (what commprof used)
runs among those hooks, so a hook registered after it (a script's checkpoint or logging hook) fell into the next
step, as idle time before its first operator, and was taken for an input stall.

Every optimizer class's `step` is wrapped once, when an optimizer of it is built (torch's own `_patch_step_function`,
which wraps it for its hooks and profiler range, then this): the outermost call that returns calls
`returned(optimizer)`.
A step that calls another optimizer's (an optimizer that wraps another, a subclass calling `super().step()`) tells
once, when the outermost returns."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from torch.optim import Optimizer

Returned = Callable[[Optimizer], None]
_told: list[Returned] = []  # the callbacks; empty once removed
_depth = threading.local()


def on_step_return(returned: Returned) -> Callable[[], None]:
    """`returned(optimizer)` each time an optimizer's outermost `step()` returns, for the optimizers built from now
    on; returns what removes it."""
    _told[:] = [returned]
    original = Optimizer._patch_step_function

    def patch(self: Optimizer) -> None:
        original(self)
        _wrap(type(self))

    Optimizer._patch_step_function = patch  # type: ignore[method-assign]

    def remove() -> None:
        Optimizer._patch_step_function = original  # type: ignore[method-assign]
        _told.clear()

    return remove


def _wrap(cls: type) -> None:
    step = cls.step  # type: ignore[attr-defined]
    if getattr(step, "commprof_returns", False):  # this class's, or one it inherits
        return

    @functools.wraps(step)
    def step_then_tell(optimizer: Optimizer, *args: Any, **kwargs: Any) -> Any:
        _depth.value = getattr(_depth, "value", 0) + 1
        try:
            out = step(optimizer, *args, **kwargs)
        finally:
            _depth.value -= 1
        if _depth.value == 0:
            for returned in list(_told):
                returned(optimizer)
        return out

    step_then_tell.commprof_returns = True  # type: ignore[attr-defined]
    cls.step = step_then_tell  # type: ignore[attr-defined]
