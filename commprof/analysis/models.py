"""Each DistributedDataParallel a script built, with the all-reduces that are its own: a GAN's generator and
discriminator, a teacher and a student. A DDP all-reduces its gradients bucket by bucket, and its buckets' sizes
follow from its parameters and its cap (kinds/ddp_buckets.py), so each all-reduce of the profiled steps is the
model's whose buckets have its size; a size that several models' buckets have is told apart by none."""

from __future__ import annotations

import statistics
from collections import defaultdict

from commprof.analysis.collectives import in_windows
from commprof.kinds.ddp_buckets import layout
from commprof.results.report import ModelAccount
from commprof.results.run_record import BuiltDDP, RunSummary
from commprof.trace.model import RankTrace, Step


def ran_cap(built: BuiltDDP) -> float | None:
    """The bucket_cap_mb a DDP ran with: what commprof applied, else what the script asked; None: DDP's default."""
    given = built.applied.get("bucket_cap_mb", built.asked.get("bucket_cap_mb"))
    return float(given) if given is not None else None


def bucket_bytes(built: BuiltDDP) -> tuple[int, ...]:
    """Its buckets as they go on the wire: DDP's layout for its cap, in 16 bits under a compression hook."""
    sizes = layout(built.parameter_sizes, ran_cap(built))
    return tuple(size // 2 for size in sizes) if built.applied.get("comm_hook") else sizes


def owners(built: list[BuiltDDP]) -> dict[int, list[str]]:
    """Per all-reduce size, the models whose buckets have it."""
    by_size: dict[int, list[str]] = defaultdict(list)
    for model in built:
        for size in set(bucket_bytes(model)):
            by_size[size].append(model.label)
    return by_size


def model_accounts(run: RunSummary | None, windows: list[tuple[RankTrace, list[Step]]]) -> list[ModelAccount]:
    """One account per DDP the script built, with its all-reduces per profiled step (the mean over ranks and
    steps); none where the run built no DDP of its own (commprof's model, others' traces)."""
    if run is None or not run.script or not run.ddp_built:
        return []
    by_size = owners(run.ddp_built)
    calls: dict[str, list[float]] = defaultdict(list)
    ms: dict[str, list[float]] = defaultdict(list)
    sent: dict[str, list[float]] = defaultdict(list)
    shared: list[float] = []
    for rank, steps in windows:
        for step in steps:
            mine = [c for c in in_windows(rank.collectives, [step]) if c.op == "all_reduce" and c.nbytes]
            shared.append(sum(1 for c in mine if len(by_size.get(c.nbytes or 0, [])) > 1))
            for model in run.ddp_built:
                own = [c for c in mine if by_size.get(c.nbytes or 0) == [model.label]]
                calls[model.label].append(len(own))
                ms[model.label].append(sum(c.end - c.start for c in own) / 1e3)
                sent[model.label].append(sum(c.nbytes or 0 for c in own))
    mean = statistics.fmean
    return [
        ModelAccount(
            name=model.label,
            module=model.module,
            parameters=model.parameters,
            built_at=model.built_at,
            built_by=model.built_by,
            bucket_cap_mb=ran_cap(model),
            commprofs=sorted(model.applied),
            buckets=list(bucket_bytes(model)),
            calls_per_step=mean(calls[model.label]) if calls[model.label] else 0.0,
            ms_per_step=mean(ms[model.label]) if ms[model.label] else 0.0,
            bytes_per_step=mean(sent[model.label]) if sent[model.label] else 0.0,
            shared_calls_per_step=mean(shared) if shared else 0.0,
        )
        for model in run.ddp_built
    ]
