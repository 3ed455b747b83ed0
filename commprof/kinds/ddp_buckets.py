"""The gradient buckets DDP really builds for a bucket_cap_mb, by DDP's own rules; settings are compared by these.

DDP (torch/nn/parallel/distributed.py and reducer.cpp's compute_bucket_assignment_by_size) walks the parameters
in the order their gradients become ready (after its first step it rebuilds the buckets in that order; about the
reverse of registration) and closes a bucket as soon as it holds at least the current limit. The limits:
- `bucket_cap_mb` not given (None): a first bucket of 1 MiB (`dist._DEFAULT_FIRST_BUCKET_BYTES`), then 25 MiB;
- `bucket_cap_mb` given, even 25: that cap for every bucket, the first included.
So two caps are the same setting when they build the same buckets, and `bucket_cap_mb=25` is not DDP's default.
A parameter larger than the cap is a bucket of its own. `gradient_as_bucket_view` changes no layout."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from commprof.results.job import BuiltDDP

T = TypeVar("T")
Layout = tuple[int, ...]

MB = 1024 * 1024
FIRST_BUCKET_BYTES = MB  # dist._DEFAULT_FIRST_BUCKET_BYTES
DEFAULT_CAP_MB = 25.0


def limits(cap_mb: float | None) -> list[int]:
    """DDP's bucket size limits in bytes: the first bucket's, then every later one's."""
    if cap_mb is None:
        return [FIRST_BUCKET_BYTES, int(DEFAULT_CAP_MB * MB)]
    return [int(cap_mb * MB)]


def layout(parameter_bytes: Sequence[int], cap_mb: float | None) -> tuple[int, ...]:
    """Bucket sizes (bytes) in the order they become ready, for parameters given in registration order."""
    caps = limits(cap_mb)
    sizes: list[int] = []
    size = 0
    for nbytes in reversed(parameter_bytes):
        size += nbytes
        if size >= caps[min(len(sizes), len(caps) - 1)]:
            sizes.append(size)
            size = 0
    if size:
        sizes.append(size)
    return tuple(sizes)


def one_per_layout(
    items: Iterable[T], layout_of: Callable[[T], Layout], seen: Iterable[Layout] = ()
) -> dict[Layout, T]:
    """Each layout's first item (a cap, a setting) in the order given, leaving out the layouts `seen`: settings
    that build the same buckets are one setting, measured once."""
    chosen: dict[Layout, T] = {}
    skipped = set(seen)
    for item in items:
        built = layout_of(item)
        if built not in chosen and built not in skipped:
            chosen[built] = item
    return chosen


def distinct_caps(parameter_bytes: Sequence[int], candidates: Sequence[float], now: Layout) -> dict[float, Layout]:
    """Of the candidate caps, one per layout (the smallest cap that builds it), leaving out the layout `now`."""
    chosen = one_per_layout(sorted(candidates), lambda cap: layout(parameter_bytes, cap), (now,))
    return {cap: built for built, cap in chosen.items()}


def ran_cap(built: BuiltDDP) -> float | None:
    """The bucket_cap_mb a DDP ran with: what commprof applied, else what the script asked; None: DDP's default."""
    given = built.applied.get("bucket_cap_mb", built.asked.get("bucket_cap_mb"))
    return float(given) if given is not None else None


def bucket_bytes(built: BuiltDDP) -> tuple[int, ...]:
    """Its buckets as they go on the wire: DDP's layout for its cap, in 16 bits under a compression hook."""
    sizes = layout(built.parameter_sizes, ran_cap(built))
    return tuple(size // 2 for size in sizes) if built.applied.get("comm_hook") not in (None, "none") else sizes


def owners(built: list[BuiltDDP]) -> dict[int, list[str]]:
    """Per all-reduce size, the DDP models whose buckets have it."""
    by_size: dict[int, list[str]] = defaultdict(list)
    for model in built:
        for size in set(bucket_bytes(model)):
            by_size[size].append(model.label)
    return by_size
