"""`commprof run`: instrumented DDP training, traces per rank, and a report."""

from __future__ import annotations

import tempfile
from pathlib import Path

from commprof.cli import console
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

    report = report_from_traces([result.run_dir], name=result.run_id, kind="run")
    write_and_show(report, config.reports_dir, quiet, traces=result.run_dir)


def check_model(config):
    """Build the model once before launching, so a broken model fails with one clear line."""
    from commprof.workloads import check_workload, load_workload

    workload = load_workload(config.model, config.model_size)
    check_workload(workload, config.batch_size, config.seed)
    return workload


def launch_with_progress(config, total_steps: int, quiet: bool, **launch_args):
    from commprof.cli.progress import run_progress
    from commprof.launch.launcher import launch

    with tempfile.TemporaryDirectory(prefix="commprof-progress-") as tmp:
        progress_file = Path(tmp) / "progress.json"
        with run_progress(progress_file, total_steps, enabled=not quiet):
            return launch(config, progress_file, **launch_args)


def write_and_show(report, reports_dir: Path, quiet: bool, traces: Path | None = None) -> None:
    from commprof.pipeline import prepare_report_dir, write_report
    from commprof.render.terminal import render_terminal

    written = write_report(report, prepare_report_dir(reports_dir, report.name))
    if not quiet:
        render_terminal(report, console.out)
    where = f"traces: {traces}/  " if traces else ""
    console.out.print(f"{where}report: {written.json_path}  {written.markdown_path}", markup=False)
