"""`commprof run`: instrumented DDP training, traces per rank, and a report."""

from __future__ import annotations

from commprof.cli import console
from commprof.cli.common import check_model, launch_with_progress, write_and_show
from commprof.cli.options import with_run_options


@with_run_options()
def run(request, quiet: bool) -> None:
    """Train a model with DDP on N ranks under the PyTorch profiler, then report where the step time went."""
    from commprof.launch.resolve import MachineProbe, resolve

    config = resolve(request, MachineProbe.detect())
    workload = check_model(config)
    console.info(f"run {config.run_id}: {workload.name} ({workload.parameter_count:,} parameters) on "
                 f"{config.world_size} {config.device} rank(s), {config.backend}, "
                 f"bucket_cap_mb={config.ddp.bucket_cap_mb:g}", quiet)
    result = launch_with_progress(config, config.steps, quiet)
    if not result.has_rank_zero:
        console.info(f"traces of ranks {', '.join(map(str, result.ranks_here))} written to {result.run_dir}/; "
                     "the node that runs rank 0 writes the report", quiet)
        return
    from commprof.pipeline import report_from_traces

    report, timeline = report_from_traces([result.run_dir], name=result.run_id, kind="run")
    write_and_show(report, config.reports_dir, quiet, traces=result.run_dir, timeline=timeline)
