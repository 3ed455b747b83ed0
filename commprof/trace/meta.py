"""Collective metadata (op, size, dtype, group) from an event's args, whichever format it uses."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from commprof.trace import rules


class CollectiveMeta(NamedTuple):  # a tuple: built tens of thousands of times per trace, cheaply
    op: str | None = None
    nelems: int | None = None
    dtype: str | None = None
    group_size: int | None = None
    process_group: str | None = None
    peer: int | None = None  # send/recv: the global rank at the other end
    sends: bool | None = None  # send/recv: True for a send, False for a recv

    @property
    def nbytes(self) -> int | None:
        size = rules.dtype_size(self.dtype)
        return self.nelems * size if self.nelems is not None and size else None

    @property
    def complete(self) -> bool:
        return None not in (self.op, self.nbytes, self.group_size)

    def filled_from(self, other: CollectiveMeta) -> CollectiveMeta:
        """Keep what is known here; take the rest from `other`."""
        if other is NO_META or None not in self:
            return self
        # _make: each field pairs with the same field of `other`, so keeps its type (a list shows mypy only their union)
        return CollectiveMeta._make(
            [mine if mine is not None else theirs for mine, theirs in zip(self, other, strict=False)]
        )


NO_META = CollectiveMeta()


def meta_from_args(args: dict[str, Any]) -> CollectiveMeta:
    """Newer traces: 'Collective name', 'In/Out msg nelems', 'dtype', 'Group size'.
    Older ones: only 'Input Dims' and 'Input type' of the op (record_shapes)."""
    name = args.get("Collective name")
    op = rules.normalize_op(name) if isinstance(name, str) else None
    nelems = _max_int(args.get("In msg nelems"), args.get("Out msg nelems"))
    dtype = args.get("dtype") if isinstance(args.get("dtype"), str) else None
    if nelems is None:
        nelems, dtype_from_shapes = _from_shapes(args.get("Input Dims"), args.get("Input type"))
        dtype = dtype or dtype_from_shapes
    group = args.get("Group size")
    pg = args.get("Process Group Name", args.get("Process Group ID"))
    direction = name.lower() if isinstance(name, str) else ""
    peer = _int(args.get("Dst Rank" if direction == "send" else "Src Rank")) if direction in ("send", "recv") else None
    return CollectiveMeta(
        op,
        nelems,
        dtype,
        group if isinstance(group, int) and group > 0 else None,
        str(pg) if pg is not None else None,
        peer,
        direction == "send" if peer is not None else None,
    )


def _int(value: Any) -> int | None:
    """A rank written as a number or as a string of digits."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _max_int(*values: Any) -> int | None:
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
    return max(ints) if ints else None


def _from_shapes(dims: Any, types: Any) -> tuple[int | None, str | None]:
    """Elements in the first tensor (or tensor list) argument, and its dtype when named."""
    if not isinstance(dims, list) or not isinstance(types, list) or not dims:
        return None, None
    first, kind = dims[0], types[0] if types else None
    if kind == "TensorList" and isinstance(first, list) and all(isinstance(d, list) for d in first):
        total = sum(_numel(d) or 0 for d in first) if first else None
        return total, None
    named = kind if isinstance(kind, str) and kind not in ("", "Scalar", "TensorList") else None
    if isinstance(first, list) and all(isinstance(d, int) for d in first) and (first or named):
        return _numel(first), named  # [] of a named dtype: a 0-dim tensor, one element (a loss scale, a norm)
    return None, None


def _numel(shape: list[Any]) -> int | None:
    return math.prod(shape) if all(isinstance(d, int) and d >= 0 for d in shape) else None
