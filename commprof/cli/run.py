"""`commprof run`: instrumented DDP training, traces per rank, and a report."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console

Opt = typer.Option


def run(
    nodes: Annotated[int, Opt(help="Number of nodes in the job; run commprof on each (needs --rdzv-endpoint).")] = 1,
    gpus: Annotated[Optional[int], Opt(help="GPUs (ranks) per node; default: every visible GPU.")] = None,
    procs: Annotated[Optional[int], Opt(help="CPU ranks per node when there is no GPU [default: 2].")] = None,
    device: Annotated[str, Opt(help="auto, cuda or cpu; auto picks cuda when a GPU is visible.")] = "auto",
    backend: Annotated[str, Opt(help="auto, nccl, gloo or mpi; auto is nccl on GPUs, gloo on CPU.")] = "auto",
    model: Annotated[str, Opt(help="mlp, transformer, convnet, mlstm, or your own: pkg.mod:build or file.py:build.")] = "mlp",
    model_size: Annotated[str, Opt(help="Size of a built-in model: small, medium or large.")] = "small",
    batch_size: Annotated[int, Opt(help="Per-rank batch size.")] = 32,
    steps: Annotated[int, Opt(help="Training steps (optimizer steps); at least wait + warmup + active.")] = 30,
    wait: Annotated[int, Opt(help="Profiler schedule: steps skipped before warming up.")] = 10,
    warmup: Annotated[int, Opt(help="Profiler schedule: warm-up steps (traced, then discarded).")] = 5,
    active: Annotated[int, Opt(help="Profiler schedule: steps recorded in the trace.")] = 10,
    schedule: Annotated[Optional[str], Opt(help="WAIT,WARMUP,ACTIVE in one option, e.g. 10,5,10 (overrides the three).")] = None,
    bucket_cap_mb: Annotated[float, Opt(help="DDP gradient bucket size cap in MB.")] = 25.0,
    precision: Annotated[str, Opt(help="fp32, bf16 or fp16 (autocast; fp16 adds a GradScaler).")] = "fp32",
    comm_hook: Annotated[str, Opt(help="Gradient compression hook: none, fp16 or bf16.")] = "none",
    grad_accum: Annotated[int, Opt(help="Micro-batches per step; the first N-1 run under no_sync().")] = 1,
    static_graph: Annotated[bool, Opt(help="DDP static_graph=True.")] = False,
    gradient_as_bucket_view: Annotated[bool, Opt(help="DDP gradient_as_bucket_view=True.")] = False,
    find_unused_parameters: Annotated[bool, Opt(help="DDP find_unused_parameters=True.")] = False,
    run_id: Annotated[Optional[str], Opt(help="Name of the run folder [default: time stamp + random suffix].")] = None,
    traces_dir: Annotated[Path, Opt(help="Where traces/<run-id>/ is written.")] = Path("traces"),
    reports_dir: Annotated[Path, Opt(help="Where reports/<run-id>/ is written.")] = Path("reports"),
    seed: Annotated[int, Opt(help="Seed for weights and synthetic data.")] = 0,
    rdzv_endpoint: Annotated[Optional[str], Opt(help="HOST:PORT of the c10d rendezvous, the same on every node.")] = None,
    timeout: Annotated[float, Opt(help="Seconds to wait for rendezvous and for any collective.")] = 300.0,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="No progress display and no tables; only the report paths.")] = False,
) -> None:
    """Train a model with DDP on N ranks under the PyTorch profiler, then report where the step time went."""
    from commprof.config import DDPOptions, ProfileSchedule
    from commprof.launch.resolve import MachineProbe, RunRequest, resolve
    from commprof.workloads import check_workload, load_workload

    sched = ProfileSchedule.parse(schedule) if schedule else ProfileSchedule(wait, warmup, active)
    request = RunRequest(
        nodes=nodes, gpus=gpus, procs=procs, device=device, backend=backend, model=model, model_size=model_size,
        batch_size=batch_size, steps=steps, schedule=sched, precision=precision, run_id=run_id,
        ddp=DDPOptions(bucket_cap_mb, comm_hook, grad_accum, static_graph, gradient_as_bucket_view,
                       find_unused_parameters),
        traces_dir=traces_dir, reports_dir=reports_dir, seed=seed, rdzv_endpoint=rdzv_endpoint, timeout_s=timeout,
    )
    config = resolve(request, MachineProbe.detect())
    workload = load_workload(config.model, config.model_size)
    check_workload(workload, config.batch_size, config.seed)
    console.info(f"run {config.run_id}: {workload.name} ({workload.parameter_count:,} parameters) on "
                 f"{config.world_size} {config.device} rank(s), {config.backend}, bucket_cap_mb={config.ddp.bucket_cap_mb:g}",
                 quiet)
    _launch_and_report(config, quiet)


def _launch_and_report(config, quiet: bool) -> None:
    from commprof.cli.progress import run_progress
    from commprof.launch.launcher import launch
    from commprof.pipeline import prepare_report_dir, report_from_traces, write_report
    from commprof.render.terminal import render_terminal

    with tempfile.TemporaryDirectory(prefix="commprof-progress-") as tmp:
        progress_file = Path(tmp) / "progress.json"
        with run_progress(progress_file, config.steps, enabled=not quiet):
            result = launch(config, progress_file)
    if not result.has_rank_zero:
        console.info(f"traces of ranks {', '.join(map(str, result.ranks_here))} written to {result.run_dir}/; "
                     "the node that runs rank 0 writes the report", quiet)
        return
    report = report_from_traces([result.run_dir], name=result.run_id, kind="run")
    written = write_report(report, prepare_report_dir(config.reports_dir, result.run_id))
    if not quiet:
        render_terminal(report, console.out)
    console.out.print(f"traces: {result.run_dir}/  report: {written.json_path}  {written.markdown_path}", markup=False)
