"""Values a command line gives as text that is not a single typed value: comma-separated lists (a sweep's values,
bench's ops and backends), message sizes (64K, 16M), booleans in a list. Each raises UsageError naming the option."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from commprof.errors import UsageError

_SIZE = re.compile(r"^(\d+)([KMG]?)B?$", re.IGNORECASE)


def parse_list(option: str, text: str, convert: Callable[[str], Any] = str) -> list:
    """'1,5,25' as [1.0, 5.0, 25.0] with convert=float; at least one value."""
    try:
        values = [convert(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{option} must be a comma-separated list, got {text!r}") from None
    if not values:
        raise UsageError(f"{option} needs at least one value")
    return values


def parse_size(option: str, text: str) -> int:
    """'1024', '64K', '16M' or '1G' (a B after it allowed) in bytes."""
    match = _SIZE.match(text.strip())
    if not match or int(match.group(1)) <= 0:
        raise UsageError(f"{option} must be a positive size like 1024, 64K, 16M or 1G, got {text!r}")
    return int(match.group(1)) * 1024 ** " KMG".index(match.group(2).upper() or " ")


def parse_bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError(text)


OWN = "own"  # in a swept list: the value the script's own config has (None: commprof sets nothing)


def own_or(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """A swept value that may be "own": None, the script's config as written."""
    return lambda text: None if text.lower() == OWN else convert(text)


# a swept option's values, each read from the text of its comma-separated list
CONVERT: dict[str, Callable[[str], Any]] = {
    "bucket_cap_mb": float,
    "comm_hook": str,
    "grad_accum": int,
    "static_graph": parse_bool,
    "gradient_as_bucket_view": parse_bool,
    "reshard_after_forward": parse_bool,
    "forward_prefetch": int,
    "backward_prefetch": int,
    "reduce_dtype": str,
    "zero_stage": own_or(int),
    "reduce_bucket_size": own_or(float),
    "allgather_bucket_size": own_or(float),
    "overlap_comm": own_or(parse_bool),
    "fusion_threshold_mb": own_or(float),
    "cycle_time_ms": own_or(float),
}


def human_bytes(n: int | None) -> str:
    """'130.00 KiB', '4.00 MiB': two decimals when they are the size exactly; otherwise four significant digits
    (at least two decimals), so that sizes a rounding would merge read apart: 1,048,576 bytes is '1.00 MiB',
    1,052,672 '1.004 MiB' and 1,062,952 '1.014 MiB'."""
    if n is None:
        return "unknown"
    size: float = n  # divided by 1024 per unit
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            if unit == "B":
                return f"{size:.0f} {unit}"
            exact = round(size, 2) == size
            decimals = 2 if exact or size >= 100 else max(2, 3 - math.floor(math.log10(size)))
            return f"{size:.{decimals}f} {unit}"
        size /= 1024
    return str(size)
