"""One number per quantity: what commprof prints, read back as a user reads it. Each quantity a report quotes in more
than one place (a headline and a table, a sentence and a figure's caption) is found by its wording everywhere it
appears; every place must give the same value. Every value printed with its interval must lie inside it.

`contradictions(text)` returns what disagrees; `quoted(text)` every (quantity, value) found, so that a test can
also check that the quantities it means to compare were found at all."""

from __future__ import annotations

import re
from collections import defaultdict

NUMBER = r"-?[\d,]*\d(?:\.\d+)?"

# (pattern, {group: quantity}); a quantity's name may name other groups of the match: "{rank}", "{label}"
QUOTES: list[tuple[str, dict[str, str]]] = [
    # the job's step without the profiler: the headline, the profiler's line
    (rf"takes (?P<v>{NUMBER}) ms without the profiler", {"v": "job step without the profiler"}),
    (rf"against (?P<v>{NUMBER}) ms outside its window \(", {"v": "job step without the profiler"}),
    # the job's step under the profiler: the profiler's line, the whole run's window
    (rf"the profiled steps took (?P<v>{NUMBER}) ms", {"v": "job step under the profiler"}),
    (rf"its median step (?P<v>{NUMBER}) ms against the run's", {"v": "job step under the profiler"}),
    # the profiler's own cost: the headline, the profiler's line, its finding
    (r"outside its window \(\+(?P<v>\d+)%", {"v": "profiler's cost %"}),
    (r"slowed the steps it recorded by (?P<v>\d+)%", {"v": "profiler's cost %"}),
    # the run's median step: the whole run's first line and its window sentence
    (rf"steps? on \d+ ranks?; median step (?P<v>{NUMBER}) ms", {"v": "whole run's median step"}),
    (rf"against the run's (?P<v>{NUMBER}) ms", {"v": "whole run's median step"}),
    # the headline's rank against its row of the breakdown
    (
        r"(?P<exposed>\d+)% of the step is exposed communication on rank (?P<rank>\d+); communication takes "
        r"(?P<comm>\d+)% of the step",
        {"exposed": "exposed % of rank {rank}", "comm": "comm % of rank {rank}"},
    ),
    (
        rf"^(?P<rank>\d+) +{NUMBER} +(?P<median>{NUMBER}) +{NUMBER} +{NUMBER} +\d+% +{NUMBER} +(?P<comm>\d+)% +"
        rf"{NUMBER} +\d+% +{NUMBER} +(?P<exposed>\d+)%",
        {
            "exposed": "exposed % of rank {rank}",
            "comm": "comm % of rank {rank}",
            "median": "median profiled step of rank {rank}",
        },
    ),
    # the Across ranks table's step: the same median
    (
        rf"^(?P<rank>\d+) +(?P<median>{NUMBER}) +{NUMBER} +{NUMBER} +{NUMBER} +\d+ +-?\d+$",
        {"median": "median profiled step of rank {rank}"},
    ),
    # a sweep's recommendation against its table
    (rf"the fastest, (?P<label>[\w.-]+), is (?P<v>{NUMBER})x", {"v": "speedup of {label}"}),
    (
        rf"\((?P<label>[\w.-]+)(?:[,:][^;\n]*)?(?:;[^;\n]*)*; (?P<v>{NUMBER}) ms per step\) (?:by|is the fastest)",
        {"v": "step of {label}"},
    ),
    (
        rf"(?P<label>[\w.-]+) is best: (?P<v>{NUMBER}) ms per step vs (?P<base>{NUMBER}) ms for the baseline, "
        rf"(?P<baseline>[\w.-]+), (?P<speedup>{NUMBER})x faster",
        {"v": "step of {label}", "base": "step of {baseline}", "speedup": "speedup of {label}"},
    ),
    (
        rf"^(?P<label>[\w.-]+)(?: \*)? +(?:\d+ +)?(?P<step>{NUMBER}) +{NUMBER}-{NUMBER} +(?P<v>{NUMBER})x",
        {"v": "speedup of {label}", "step": "step of {label}"},
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


def quoted(text: str) -> list[tuple[str, str]]:
    """Every (quantity, value as printed) the text quotes, in the order of QUOTES."""
    found = []
    for pattern, groups in QUOTES:
        for match in re.finditer(pattern, text, re.M):
            for group, name in groups.items():
                found.append((name.format(**match.groupdict()), match.group(group)))
    return found


def contradictions(text: str) -> list[str]:
    """A quantity quoted with two values within one report (an output may hold several: a run, then its advise),
    or a value outside its own interval: one line each."""
    found = []
    for report in re.split(r"^(?=commprof report: )", text, flags=re.M):
        values: dict[str, set[float]] = defaultdict(set)
        for name, value in quoted(report):
            values[name].add(_number(value))
        found += [f"{name}: {sorted(v)}" for name, v in values.items() if len(v) > 1]
    for pattern in INTERVALS:
        for match in re.finditer(pattern, text):
            value, low, high = (_number(match.group(g)) for g in ("v", "low", "high"))
            if not low <= value <= high:
                found.append(f"outside its interval: {match.group(0)}")
    return found
