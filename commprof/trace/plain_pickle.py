"""Pickles from elsewhere read as data, never as code: torch's Flight Recorder dumps are pickles, and torch's own
loader calls pickle.load on them. This reader admits plain containers, strings and numbers, and torch's typed-list
tags; anything else in a pickle is refused before it runs."""

from __future__ import annotations

import io
import pickle
from typing import Any

# the only callables a dump may name: torch's JIT pickler tags typed lists with these, and each returns its argument
_TYPED_LISTS = {
    ("torch.jit._pickle", name): (lambda data, *_: data)
    for name in ("build_intlist", "build_doublelist", "build_boollist", "restore_type_tag")
}


class NamesCode(pickle.UnpicklingError):
    """A pickle that names a class or function: refused, nothing in it was run."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _TYPED_LISTS:
            return _TYPED_LISTS[module, name]
        raise NamesCode(f"a dump names {module}.{name}: only plain data is read, nothing is run")


def plain_loads(data: bytes) -> Any:
    """A Flight Recorder dump, a pickle as torch writes it, read as data: dicts, lists, tuples, sets, strings,
    bytes, numbers, booleans and None. A pickle that names any other class or function (what would run code) is
    refused with NamesCode (a pickle.UnpicklingError) before anything in it runs."""
    return _PlainUnpickler(io.BytesIO(data)).load()
