"""Uneven inputs under torch's Join: once a rank's inputs run out, `Join.__exit__` shadows the others' collectives
for it until every rank is done, and a Joinable optimizer (ZeroRedundancyOptimizer) steps with them. Those steps are
the others', not the rank's own: while a Join exits, the rank's optimizer steps are counted apart."""

from __future__ import annotations

from typing import Any


class JoinWatch:
    """While installed, `joining` is True inside any Join's exit (its shadow loop); `joined_steps` counts the
    optimizer steps taken there."""

    def __init__(self) -> None:
        self.joining = False
        self.joined_steps = 0
        self._original: Any = None

    def install(self) -> None:
        try:
            from torch.distributed.algorithms.join import Join
        except ImportError:
            return
        original, watch = Join.__exit__, self
        self._original = original

        def __exit__(join: Any, *args: Any) -> Any:
            watch.joining = True
            try:
                return original(join, *args)
            finally:
                watch.joining = False

        Join.__exit__ = __exit__  # type: ignore[method-assign]

    def uninstall(self) -> None:
        if self._original is not None:
            from torch.distributed.algorithms.join import Join

            Join.__exit__ = self._original  # type: ignore[method-assign]
            self._original = None
