"""The whole run per dimension: from each rank's whole-run record (every collective of every group, each step:
instrument/collective_clock.py), each dimension's time in flight per step over the steps kept in full, named as the
profiled window's dimensions are (analysis/groups.group_label)."""

from __future__ import annotations

import statistics
from collections import defaultdict

from commprof.analysis.groups import group_label
from commprof.results.step_ledger import RankLedger
from commprof.results.whole_run import DimensionRun


def dimension_runs(ledgers: dict[int, RankLedger], left_out: frozenset[int] = frozenset()) -> list[DimensionRun]:
    """Per dimension, its collectives' time in flight per step (the median of each rank's kept steps, then the mean
    over ranks), its calls per step, its groups' members; none where the records name fewer than two dimensions
    (the whole run's one figure says it). `left_out`: steps not counted (torch.compile's)."""
    comm: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    calls: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    members: dict[str, set[tuple[int, ...]]] = defaultdict(set)
    for rank, ledger in ledgers.items():
        labels = {name: group_label(name, g.desc) for name, g in ledger.groups.items()}
        for name, group in ledger.groups.items():
            if group.ranks:
                members[labels[name]].add(tuple(group.ranks))
        for step, entry in sorted(ledger.entries().items()):
            if step in left_out:
                continue
            per_label: dict[str, tuple[float, int]] = {label: (0.0, 0) for label in set(labels.values())}
            for timed in entry.groups:
                label = labels.get(timed.group)
                if label is not None:  # two groups of one dimension in one step (rare): their times added
                    ms, n = per_label[label]
                    per_label[label] = (ms + timed.comm_ms, n + timed.calls)
            for label, (ms, n) in per_label.items():
                comm[label][rank].append(ms)
                calls[label][rank].append(n)
    if len(comm) < 2:
        return []
    runs = [
        DimensionRun(
            dimension=label,
            groups=sorted(list(ranks) for ranks in members[label]),
            comm_ms=statistics.fmean(statistics.median(v) for v in comm[label].values()),
            calls_per_step=statistics.fmean(statistics.fmean(v) for v in calls[label].values()),
            rank_comm_ms={str(r): statistics.median(v) for r, v in sorted(comm[label].items())},
        )
        for label in comm
    ]
    return sorted(runs, key=lambda d: -d.comm_ms)
