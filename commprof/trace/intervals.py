"""Interval maths over sorted lists of (start, end) tuples. Pure, small, exact."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable, Sequence

Interval = tuple[float, float]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Union as sorted, disjoint intervals; empty intervals are dropped."""
    result: list[Interval] = []
    first, last = 0.0, None
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if last is not None and start <= last:
            if end > last:
                last = end
        else:
            if last is not None:
                result.append((first, last))
            first, last = start, end
    if last is not None:
        result.append((first, last))
    return result


def total(intervals: Iterable[Interval]) -> float:
    return sum(e - s for s, e in intervals)


def clip(merged: Sequence[Interval], lo: float, hi: float) -> list[Interval]:
    """Parts of merged intervals inside [lo, hi]; O(log n + k) by bisecting the ends."""
    if hi <= lo or not merged:
        return []
    ends = _Ends(merged)
    first = bisect_right(ends, lo)
    result = []
    for start, end in merged[first:]:
        if start >= hi:
            break
        result.append((max(start, lo), min(end, hi)))
    return [i for i in result if i[1] > i[0]]


def intersect(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """Intersection of two merged lists (two pointers)."""
    result, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            result.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return result


def subtract(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """Parts of merged list a not covered by merged list b."""
    result, j = [], 0
    for start, end in a:
        while j < len(b) and b[j][1] <= start:
            j += 1
        k, cursor = j, start
        while k < len(b) and b[k][0] < end:
            if b[k][0] > cursor:
                result.append((cursor, b[k][0]))
            cursor = max(cursor, b[k][1])
            k += 1
        if cursor < end:
            result.append((cursor, end))
    return result


def busy_until(merged: Sequence[Interval], x: float) -> float | None:
    """The last moment up to x at which merged intervals are busy (x itself when one covers it), or None."""
    i = bisect_left(_Ends(merged), x)
    if i < len(merged) and merged[i][0] < x:
        return x
    return merged[i - 1][1] if i > 0 else None


class _Ends:
    """A read-only view of the interval ends, for bisect without copying."""

    def __init__(self, merged: Sequence[Interval]):
        self._merged = merged

    def __len__(self) -> int:
        return len(self._merged)

    def __getitem__(self, index: int) -> float:
        return self._merged[index][1]


__all__ = ["Interval", "merge", "total", "clip", "intersect", "subtract", "busy_until"]
