"""Steps several commands share before they launch."""

from __future__ import annotations

from commprof.config import RunConfig


def check_model(config: RunConfig):
    """Build the model once before launching, so a broken model fails with one clear line."""
    from commprof.workloads import check_workload, load_workload

    workload = load_workload(config.model, config.model_size)
    check_workload(workload, config.batch_size, config.seed)
    return workload


def describe(config: RunConfig, workload) -> str:
    return (f"{workload.name} ({workload.parameter_count:,} parameters) on {config.world_size} {config.device} "
            f"rank(s), {config.backend}")
