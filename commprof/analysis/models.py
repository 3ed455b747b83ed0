"""Each model a script built, with the collectives that are its own: a GAN's generator and discriminator (two
DistributedDataParallel), a teacher and a student (two FSDP2 roots); several DeepSpeed engines (an actor and a
critic) are named with their settings, their collectives not told apart (ZeRO's buckets have no model's own sizes).

A DDP all-reduces its gradients bucket by bucket, and its buckets' sizes follow from its parameters and its cap
(kinds/ddp_buckets.py); an FSDP unit all-gathers its parameters' shards and reduce-scatters its gradients, whose
sizes follow from the parameters it holds. So each collective of the profiled steps is the model's whose buckets or
units have its size; a size that several models' have is told apart by none."""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from commprof.analysis.collectives import in_windows
from commprof.kinds.ddp_buckets import bucket_bytes, owners, ran_cap
from commprof.results.job import BuiltDDP, BuiltDeepSpeed, BuiltFSDP
from commprof.results.report import ModelAccount
from commprof.results.run_record import RunSummary
from commprof.trace.model import Collective, RankTrace, Step
from commprof.trace.rules import FSDP_PURPOSE

PADDING = 0.05  # an FSDP shard's size where not recorded: its parameters' over the ranks, each padded


def element_bytes(dtype: str | None) -> int:
    """The bytes of one element of a collective's dtype as traces name it (float, c10::BFloat16, Half, double)."""
    name = (dtype or "float").lower()
    return 2 if "16" in name or "half" in name else 8 if "64" in name or "double" in name else 4


def _unit_owner(sharded: list[BuiltFSDP], ranks: int) -> Callable[[Collective], list[str]]:
    """The FSDP models one of whose units a collective's size fits. A unit's padded shard (elements per rank, as
    FSDP2 laid it out): an all-gather moves it (Gloo's ranges count its input) or ranks times it (NCCL's count its
    output), a reduce-scatter ranks times it; in the collective's own dtype (param_dtype, reduce_dtype). Without the
    shard recorded, the unit's parameters over the ranks, within PADDING."""
    units: list[tuple[str, float, bool]] = []  # (model, the unit's padded elements over all ranks, recorded)
    for model in sharded:
        shards = model.unit_shard_elements or [0] * len(model.unit_parameters)
        for shard, count in zip(shards, model.unit_parameters, strict=True):
            units.append((model.label, shard * ranks if shard else float(count), shard > 0))

    def owner(call: Collective) -> list[str]:
        if call.purpose not in FSDP_PURPOSE.values() or not call.nbytes:
            return []
        elements = call.nbytes / element_bytes(call.dtype)
        gather = call.purpose == FSDP_PURPOSE["all_gather"]
        sizes = (lambda whole: (whole / ranks, whole)) if gather else (lambda whole: (whole,))
        return sorted(
            {
                name
                for name, whole, exact in units
                if any(abs(elements - size) <= (0.001 if exact else PADDING) * size for size in sizes(whole))
            }
        )

    return owner


def model_accounts(run: RunSummary | None, windows: list[tuple[RankTrace, list[Step]]]) -> list[ModelAccount]:
    """One account per model the script built (each DDP, each FSDP root), with its collectives per profiled step
    (the mean over ranks and steps); none where the run built none of its own (commprof's model, others' traces)."""
    if run is None or not run.script:
        return []
    ddps, roots, engines = run.job.of(BuiltDDP), run.job.of(BuiltFSDP), run.job.of(BuiltDeepSpeed)
    if not (ddps or roots or len(engines) > 1):
        return []
    by_size = owners(ddps)
    fsdp_owner = _unit_owner(roots, max(1, run.world_size))

    def owner(call: Collective) -> list[str]:
        if call.op == "all_reduce" and call.purpose is None:
            return by_size.get(call.nbytes or 0, [])
        return fsdp_owner(call)

    names = [m.label for m in ddps] + [m.label for m in roots]
    counted: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in names}
    shared: list[float] = []
    for rank, steps in windows:
        for step in steps:
            calls = [(c, owner(c)) for c in in_windows(rank.collectives, [step])]
            shared.append(sum(1 for _, who in calls if len(who) > 1))
            for name in names:
                own = [c for c, who in calls if who == [name]]
                counted[name]["calls"].append(len(own))
                counted[name]["ms"].append(sum(c.end - c.start for c in own) / 1e3)
                counted[name]["bytes"].append(sum(c.nbytes or 0 for c in own))

    def mean(name: str, what: str) -> float:
        values = counted[name][what]
        return statistics.fmean(values) if values else 0.0

    def measured(account: ModelAccount) -> ModelAccount:
        name = account.name
        return dataclasses.replace(
            account,
            calls_per_step=mean(name, "calls"),
            ms_per_step=mean(name, "ms"),
            bytes_per_step=mean(name, "bytes"),
            shared_calls_per_step=statistics.fmean(shared) if shared else 0.0,
        )

    ddp = [_named(m, bucket_cap_mb=ran_cap(m), buckets=list(bucket_bytes(m)), built_by=m.built_by) for m in ddps]
    fsdp = [
        _named(
            m,
            kind="FSDP",
            units=list(m.unit_parameters),
            fsdp={**{k: v for k, v in m.asked.items() if k not in m.applied}, **m.applied},
        )
        for m in roots
    ]
    several_engines = len(engines) > 1  # an actor and a critic: named, their collectives not told apart
    zero = [
        _named(m, kind="ZeRO", built_by=m.built_by, told_apart=False, zero={"stage": m.zero_stage, **m.settings})
        for m in engines
        if several_engines
    ]
    return [measured(account) for account in ddp + fsdp] + zero


def _named(built: BuiltDDP | BuiltFSDP | BuiltDeepSpeed, **kind_own: Any) -> ModelAccount:
    """A model's account before its collectives are counted: what every kind records of it, and its kind's own."""
    return ModelAccount(
        name=built.label,
        module=built.module,
        parameters=built.parameters,
        built_at=built.built_at,
        commprofs=sorted(built.applied),
        **kind_own,
    )
