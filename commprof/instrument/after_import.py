"""Wrapping a library the script may import later (DeepSpeed, Horovod): at once where it is imported already, else the
moment its module has been executed, before whoever imported it gets it."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any, Callable


def when_imported(name: str, then: Callable[[Any], None]) -> None:
    """`then(module)` for the module `name`: now if it is imported, else once it is."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then(module)` once the module `name` has been executed, before whoever imported it gets it."""

    def __init__(self, name: str, then: Callable[[Any], None]):
        self.name, self.then, self.finding = name, then, False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name or self.finding:
            return None
        self.finding = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.finding = False
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute, then = loader.exec_module, self.then

        def exec_module(module: Any) -> None:
            execute(module)
            then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        sys.meta_path.remove(self)
        return spec
