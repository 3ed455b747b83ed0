"""What a run really trained and which collectives it really ran, as facts (results/job.py), for the commands that
compare runs (scale, compare): the kind of job from what the run built (or, for a script that shards its model with
fully_shard and left no record of it, from FSDP's own ranges around its collectives), and each collective's bus
bandwidth by what the job ran it as."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from commprof.config import RunConfig
from commprof.kinds import KINDS, built_kind
from commprof.results.job import CollectiveBusbw, JobAsRun
from commprof.results.report import CollectiveStats
from commprof.results.run_record import RunRecord
from commprof.trace.rules import FSDP_PURPOSE, ZERO_SCALAR

# a collective's purpose, as the trace names it, -> what the job ran: FSDP's reduce-scatter whatever op the backend
# ran it as (Gloo: an all-reduce of the whole buffer)
_RAN_AS = {FSDP_PURPOSE["all_gather"]: "all_gather", FSDP_PURPOSE["post_backward_reduce"]: "reduce_scatter"}
_FSDP_PURPOSES = frozenset(FSDP_PURPOSE.values())


def ran_as(collective: CollectiveStats) -> str:
    """What the job ran a collective as: FSDP's purpose where its ranges name one, else the op."""
    return _RAN_AS.get(collective.purpose or "", collective.op)


def busbw_by_size(collectives: Iterable[CollectiveStats]) -> list[CollectiveBusbw]:
    """Every collective the job ran with a size and a bus bandwidth, by what it ran it as (in order of first
    appearance), each size once (the report keeps a size apart by phase and dtype: their busbw weighed by their
    calls), smallest first; a ZeRO norm or overflow flag (one element) is not a transfer and left out."""
    calls: dict[tuple[str, str, int], list[tuple[float, int]]] = {}
    for c in collectives:
        if c.bytes and c.busbw_gbps is not None and c.purpose != ZERO_SCALAR:
            calls.setdefault((ran_as(c), c.op, c.bytes), []).append((c.busbw_gbps, max(c.count, 1)))
    order = list(dict.fromkeys(name for name, _, _ in calls))
    return [
        CollectiveBusbw(name, op, size, sum(bw * n for bw, n in seen) / sum(n for _, n in seen))
        for (name, op, size), seen in sorted(calls.items(), key=lambda item: (order.index(item[0][0]), item[0][2]))
    ]


def largest_by_collective(collectives: Iterable[CollectiveStats]) -> list[CollectiveBusbw]:
    """Per collective the job ran, its largest call's bus bandwidth (the one nearest the link's), in order of
    first appearance."""
    largest: dict[str, CollectiveBusbw] = {}
    for busbw in busbw_by_size(collectives):
        if busbw.collective not in largest or busbw.bytes > largest[busbw.collective].bytes:
            largest[busbw.collective] = busbw
    return list(largest.values())


def mean_by_collective(runs: Sequence[Sequence[CollectiveBusbw]]) -> list[CollectiveBusbw]:
    """Several launches' largest calls, one per collective: the mean bus bandwidth over the launches that ran it,
    at the largest size any ran."""
    merged: dict[str, list[CollectiveBusbw]] = {}
    for run in runs:
        for busbw in run:
            merged.setdefault(busbw.collective, []).append(busbw)
    return [
        dataclasses.replace(max(seen, key=lambda b: b.bytes), busbw_gbps=sum(b.busbw_gbps for b in seen) / len(seen))
        for seen in merged.values()
    ]


def kind_ran(config: RunConfig, run: RunRecord | None, collectives: Iterable[CollectiveStats]) -> str | None:
    """The kind of job a launch ran: a built-in model's strategy; for a script, what its launch built, else FSDP where
    FSDP2's ranges name its collectives' purpose (a script that calls fully_shard itself); None: none known."""
    if not config.script:
        return config.strategy
    built = built_kind(run) if run is not None else None
    if built is not None:
        return built.strategy
    if any(c.purpose in _FSDP_PURPOSES for c in collectives):
        return "fsdp"
    return None


def job_as_run(config: RunConfig, run: RunRecord | None, strategy: str | None) -> JobAsRun:
    """The job of `strategy` (kind_ran's, over every launch) as the run built it: a built-in model's name and its
    options as commprof gave them; a script's module and parameter count as its launch recorded them, and the kind's
    options as the job ran with them where its launch recorded what it built (else not known)."""
    model = run.model if run is not None else None
    parameters = run.parameters if run is not None else None
    several = run.job.built if run else []
    if len(several) > 1:  # several models (a GAN's two DDPs, an FSDP encoder and a DDP head): each named, all counted
        names = [f"{b.label} ({b.module})" for b in several]
        model, parameters = f"{', '.join(names[:-1])} and {names[-1]}", sum(b.parameters for b in several)
    if not config.script:
        options = getattr(config, config.strategy)
        return JobAsRun(config.strategy, model or config.model, parameters, dataclasses.asdict(options))
    kind = KINDS.get(strategy or "")
    settings = None
    if kind is not None and run is not None and kind.built(run) is not None:
        settings = kind.ran_with(kind.as_written(getattr(config, kind.strategy)), run)
    return JobAsRun(strategy, model, parameters or None, settings)
