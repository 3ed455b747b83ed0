"""Helpers the commands share: model check, launch with progress, writing and showing a report."""

from __future__ import annotations

import tempfile
from pathlib import Path

from commprof.cli import console


def check_model(config):
    """Build the model once before launching, so a broken model fails with one clear line."""
    from commprof.workloads import check_workload, load_workload

    workload = load_workload(config.model, config.model_size)
    check_workload(workload, config.batch_size, config.seed)
    return workload


def launch_with_progress(config, total_steps: int, quiet: bool, **launch_args):
    from commprof.cli.progress import run_progress
    from commprof.launch.launcher import launch

    from commprof.launch.mpi import launch_mpi_job

    via_mpirun = config.backend == "mpi" and not launch_args
    with tempfile.TemporaryDirectory(prefix="commprof-progress-") as tmp:
        progress_file = Path(tmp) / "progress.json"
        with run_progress(progress_file, total_steps, enabled=not quiet):
            if via_mpirun:
                return launch_mpi_job(config, progress_file)
            return launch(config, progress_file, **launch_args)


def write_and_show(report, reports_dir: Path, quiet: bool, traces: Path | None = None, timeline: dict | None = None) -> None:
    from commprof.pipeline import prepare_report_dir, write_report
    from commprof.render.terminal import render_terminal

    written = write_report(report, prepare_report_dir(reports_dir, report.name), timeline)
    if console.json_mode():
        console.out.print_json(report.to_json())
        return
    if not quiet:
        render_terminal(report, console.out)
    where = f"traces: {traces}/\n" if traces else ""
    console.out.print(f"{where}report: {written.html_path} (also report.json, report.md and the plots beside it)",
                      markup=False)
