"""One number per quantity: what commprof prints, read back as a user reads it. Each quantity a report quotes in more
than one place (a headline and a table, a sentence and a figure's caption) is found by its wording everywhere it
appears; every place must give the same value. Every value printed with its interval must lie inside it.

`contradictions(text)` returns what disagrees, as facts (`Disagreement`, `OutsideInterval`); `quoted(text)` every
(quantity, value) found, so that a test can also check that the quantities it means to compare were found at all."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import NamedTuple


class Quantity(NamedTuple):
    """A quantity a report quotes: what it is, and of whom where it is one rank's or one setting's ("rank 1",
    "bucket-5mb"); "" where the job has one."""

    what: str
    of: str = ""


class Disagreement(NamedTuple):
    """A quantity quoted with several values within one report."""

    quantity: Quantity
    values: list[float]


class OutsideInterval(NamedTuple):
    """A value printed outside its own interval."""

    value: float
    low: float
    high: float


NUMBER = r"-?[\d,]*\d(?:\.\d+)?"

# (pattern, {group: quantity}); whose it is may name other groups of the match: "rank {rank}", "{label}"
QUOTES: list[tuple[str, dict[str, Quantity]]] = [
    # the job's step without the profiler: the headline, the profiler's line
    (rf"takes (?P<v>{NUMBER}) ms without the profiler", {"v": Quantity("job step without the profiler")}),
    (rf"against (?P<v>{NUMBER}) ms outside its window \(", {"v": Quantity("job step without the profiler")}),
    # the job's step under the profiler: the profiler's line, the whole run's window
    (rf"the profiled steps took (?P<v>{NUMBER}) ms", {"v": Quantity("job step under the profiler")}),
    (rf"its median step (?P<v>{NUMBER}) ms against the run's", {"v": Quantity("job step under the profiler")}),
    # the profiler's own cost: the headline, the profiler's line, its finding
    (r"outside its window \(\+(?P<v>\d+)%", {"v": Quantity("profiler's cost %")}),
    (r"slowed the steps it recorded by (?P<v>\d+)%", {"v": Quantity("profiler's cost %")}),
    # the run's median step: the whole run's first line and its window sentence
    (rf"steps? on \d+ ranks?; median step (?P<v>{NUMBER}) ms", {"v": Quantity("whole run's median step")}),
    (rf"against the run's (?P<v>{NUMBER}) ms", {"v": Quantity("whole run's median step")}),
    # the headline's rank against its row of the breakdown
    (
        r"(?P<exposed>\d+)% of the step is exposed communication on rank (?P<rank>\d+); communication takes "
        r"(?P<comm>\d+)% of the step",
        {"exposed": Quantity("exposed %", "rank {rank}"), "comm": Quantity("comm %", "rank {rank}")},
    ),
    (
        rf"^(?P<rank>\d+) +{NUMBER} +(?P<median>{NUMBER}) +{NUMBER} +{NUMBER} +\d+% +{NUMBER} +(?P<comm>\d+)% +"
        rf"{NUMBER} +\d+% +{NUMBER} +(?P<exposed>\d+)%",
        {
            "exposed": Quantity("exposed %", "rank {rank}"),
            "comm": Quantity("comm %", "rank {rank}"),
            "median": Quantity("median profiled step", "rank {rank}"),
        },
    ),
    # the Across ranks table's step: the same median
    (
        rf"^(?P<rank>\d+) +(?P<median>{NUMBER}) +{NUMBER} +{NUMBER} +{NUMBER} +\d+ +-?\d+$",
        {"median": Quantity("median profiled step", "rank {rank}")},
    ),
    # a sweep's recommendation against its table
    (rf"the fastest, (?P<label>[\w.-]+), is (?P<v>{NUMBER})x", {"v": Quantity("speedup", "{label}")}),
    (
        rf"\((?P<label>[\w.-]+)(?:[,:][^;\n]*)?(?:;[^;\n]*)*; (?P<v>{NUMBER}) ms per step\) (?:by|is the fastest)",
        {"v": Quantity("step", "{label}")},
    ),
    (
        rf"(?P<label>[\w.-]+) is best: (?P<v>{NUMBER}) ms per step vs (?P<base>{NUMBER}) ms for the baseline, "
        rf"(?P<baseline>[\w.-]+), (?P<speedup>{NUMBER})x faster",
        {
            "v": Quantity("step", "{label}"),
            "base": Quantity("step", "{baseline}"),
            "speedup": Quantity("speedup", "{label}"),
        },
    ),
    (
        rf"^(?P<label>[\w.-]+)(?: \*)? +(?:\d+ +)?(?P<step>{NUMBER}) +{NUMBER}-{NUMBER} +(?P<v>{NUMBER})x",
        {"v": Quantity("speedup", "{label}"), "step": Quantity("step", "{label}")},
    ),
]

# a sweep's recommendation takes one of these forms, whichever its measurements called for
RECOMMENDATIONS = (r"the fastest, (?P<label>", r"is best: ")

# a value printed with its interval: "3.1 ms per step (20% of the step, 95% CI 1.3 to 6.8)", "1.03x (95% CI
# 0.95-1.18)"
INTERVALS = [
    rf"(?P<v>{NUMBER})(?: ms per step| ms)? \((?:[^()]*?, )?95% CI (?P<low>{NUMBER}) to (?P<high>{NUMBER})\)",
    rf"(?P<v>{NUMBER})x(?: faster| slower)? \(95% CI (?P<low>{NUMBER})-(?P<high>{NUMBER})\)",
]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def quoted(text: str) -> list[tuple[Quantity, str]]:
    """Every (quantity, value as printed) the text quotes, in the order of QUOTES."""
    found = []
    for pattern, groups in QUOTES:
        for match in re.finditer(pattern, text, re.M):
            for group, quantity in groups.items():
                whose = quantity.of.format(**match.groupdict())
                found.append((Quantity(quantity.what, whose), match.group(group)))
    return found


def contradictions(text: str) -> list[Disagreement | OutsideInterval]:
    """A quantity quoted with two values within one report (an output may hold several: a run, then its advise),
    or a value outside its own interval: one each."""
    found: list[Disagreement | OutsideInterval] = []
    for report in re.split(r"^(?=commprof report: )", text, flags=re.M):
        values: dict[Quantity, set[float]] = defaultdict(set)
        for quantity, value in quoted(report):
            values[quantity].add(_number(value))
        found += [Disagreement(quantity, sorted(v)) for quantity, v in values.items() if len(v) > 1]
    for pattern in INTERVALS:
        for match in re.finditer(pattern, text):
            value, low, high = (_number(match.group(g)) for g in ("v", "low", "high"))
            if not low <= value <= high:
                found.append(OutsideInterval(value, low, high))
    return found
