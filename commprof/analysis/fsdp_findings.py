"""FSDP's resharding (`reshard_after_forward`), predicted from the run's own all-gathers: FSDP2 frees each block's
gathered parameters after its forward and gathers them again in the backward; kept (False), the backward's
all-gathers go, and each rank holds the block's whole parameters from its forward to its backward instead.

The gain per profiled step is the time of the backward's parameter all-gathers: on CPU ranks each whole (they take
the cores the backward runs on, docs/semantics.md "Claims"), on GPUs the part no computation hid. The prefetch depths
and the reduce dtype have no model of their cost here: `commprof tune` measures them."""

from __future__ import annotations

import dataclasses
import statistics

from commprof.analysis.collectives import in_windows
from commprof.analysis.evidence import Evidence
from commprof.analysis.groups import label_of
from commprof.analysis.stats import median_ci
from commprof.results.finding_facts import FsdpReshard
from commprof.results.job import BuiltFSDP
from commprof.results.report import Finding
from commprof.results.run_record import RunSummary
from commprof.settings import FSDPOptions, fsdp_as_written
from commprof.trace.intervals import clip, total
from commprof.trace.rules import FSDP_PURPOSE

GATHER = FSDP_PURPOSE["all_gather"]
FLOAT_BYTES = 4  # the parameters' dtype as FSDP gathers them without a param_dtype


def fsdp_options(run: RunSummary | None) -> FSDPOptions | None:
    """The FSDP options the run trained with: commprof's model's (--strategy fsdp), a script's fully_shard as
    written with what commprof set on top; None: the job holds no FSDP."""
    built = run.job.first(BuiltFSDP) if run is not None else None
    if run is None or built is None:
        return None
    ran = {**{k: v for k, v in built.asked.items() if v is not None}, **built.applied}
    return dataclasses.replace(fsdp_as_written(run.config.fsdp), **ran)


def resharding(evidence: Evidence) -> list[Finding]:
    report = evidence.report
    options = fsdp_options(report.run)
    if options is None or options.reshard_after_forward is False:
        return []
    per_step: list[float] = []  # each rank's each step: what the backward's all-gathers cost it
    calls: list[int] = []
    over: list[tuple[str | None, int | None]] = []  # each gather's dimension and group size
    for rank, steps in evidence.windows:
        for step in steps:
            gathers = [
                c
                for c in in_windows(rank.collectives, [step])
                if c.purpose == GATHER and c.phase == "backward" and c.op == "all_gather"
            ]
            whole = sum(c.end - c.start for c in gathers)
            over += [(label_of(rank, c)[0], c.group_size) for c in gathers]
            # CPU ranks: in full, as the bucket model counts all-reduces there (measured: render/finding_words.SERIAL);
            # advise measured more than this predicted on CPU in 3 runs of 3 (docs/benchmarks.md)
            hidden = 0.0 if evidence.serial else sum(total(clip(rank.compute, c.start, c.end)) for c in gathers)
            per_step.append((whole - hidden) / 1e3)
            calls.append(len(gathers))
    if not per_step or max(per_step) <= 0:
        return []
    run = report.run
    parameters = (sum(b.parameters for b in run.job.of(BuiltFSDP)) or run.parameters or 0) if run else 0
    dimension, shards = statistics.mode(over)  # the dimension FSDP shards over, and its groups' size
    ranks = max(2, shards or (run.world_size if run else 2))
    kept = parameters * FLOAT_BYTES * (ranks - 1) / ranks
    facts = FsdpReshard(
        gathers_per_step=statistics.fmean(calls),
        kept_bytes=kept,
        serial=evidence.serial,
        options=dataclasses.replace(options, reshard_after_forward=False),
        dimension=dimension if dimension and len(report.dimensions) > 1 else None,
    )
    return [
        Finding(
            kind=facts.KIND,
            facts=facts,
            gain_ms=median_ci(per_step),
            setting={"reshard_after_forward": False},
        )
    ]
