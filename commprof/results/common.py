"""What every result shares: the schema version, JSON output, and the estimate type."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import msgspec

SCHEMA_VERSION = 2  # 2: a run's job is one value ("job"), not a list per kind (results/job.py)


class Result:
    """Mixin for the result dataclasses: each has `kind` and `schema_version` fields."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=as_text)


def as_text(obj: object) -> Any:
    """What JSON holds as text: a run's folders (paths) and str subclasses such as torch.__version__; and what a job
    built (results/job.py's records), as the objects msgspec makes of them, their kind included."""
    if isinstance(obj, (PurePath, str)):
        return str(obj)
    if isinstance(obj, msgspec.Struct):
        return msgspec.to_builtins(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def signed(value: float, spec: str) -> str:
    """`value` in format `spec` (without its sign option) with its sign, +16% or -0.4, but none when it rounds to
    zero: 0%, never -0% or +0%."""
    text = format(value, spec)
    if not any(c in "123456789" for c in text):
        return format(0.0, spec)
    return format(value, "+" + spec)


def job_steps(per_rank: Sequence[Sequence[float]]) -> list[float]:
    """The job's time at each step: its slowest rank's (DDP synchronises every step), over the steps every rank has."""
    return [max(at_step) for at_step in zip(*per_rank, strict=False)]


def decimals_apart(values: list[float], least: int = 1, most: int = 3) -> int:
    """The fewest decimals, from `least` to `most`, that show values apart as far as `most` decimals tell them
    apart: an interval 0.48 to 0.55 as such, not as '0.5 to 0.5'."""
    distinct = len({round(v, most) for v in values})
    return next((d for d in range(least, most) if len({fixed(v, d) for v in values}) == distinct), most)


def fixed(value: float, decimals: int) -> str:
    """`value` with these decimals, never '-0.0'."""
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text


def interval_text(estimate: Estimate) -> tuple[str, str]:
    """(value, '95% CI low to high') at the precision that shows the interval (see decimals_apart)."""
    d = decimals_apart([estimate.value, estimate.low, estimate.high])
    return fixed(estimate.value, d), f"95% CI {fixed(estimate.low, d)} to {fixed(estimate.high, d)}"


# The one rule for every claim (findings, sweep, tune, advise, diff, compare; analysis/stats.py applies it): a
# difference counts when its interval excludes no change AND it is at least this share of the step.
PRACTICAL_SHARE = 0.03
# Beyond this slowdown of the profiled steps against the unprofiled ones, every breakdown says it describes slowed
# steps (analysis/distortion.py measures it).
WARN_SLOWDOWN = 0.05


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% confidence interval."""

    value: float
    low: float
    high: float

    def excludes(self, x: float) -> bool:
        return not self.low <= x <= self.high
