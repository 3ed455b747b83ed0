"""`commprof bench`: collective micro-benchmark per backend, in the spirit of nccl-tests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import JsonOpt, LocalAddrOpt, NodesOpt, QuietOpt, RdzvEndpointOpt, ReportsDirOpt

Opt = typer.Option
_SIZE = re.compile(r"^(\d+)([KMG]?)B?$", re.IGNORECASE)


def parse_size(option: str, text: str) -> int:
    from commprof.errors import UsageError

    match = _SIZE.match(text.strip())
    if not match or int(match.group(1)) <= 0:
        raise UsageError(f"{option} must be a positive size like 1024, 64K, 16M or 1G, got {text!r}")
    return int(match.group(1)) * 1024 ** " KMG".index(match.group(2).upper() or " ")


def bench(
    backend: Annotated[
        str, Opt(help="Backends to measure, comma-separated: gloo, nccl, mpi; auto is nccl on GPUs, gloo on CPU.")
    ] = "auto",
    ops: Annotated[
        str, Opt(help="Collectives, comma-separated.")
    ] = "all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all,send_recv",
    min_bytes: Annotated[str, Opt(help="Smallest message (e.g. 1K).")] = "1K",
    max_bytes: Annotated[
        Optional[str], Opt(help="Largest message (e.g. 16M) [default: 1G on GPUs, 16M on CPU].", show_default=False)
    ] = None,
    factor: Annotated[int, Opt(help="Multiply the size by this between measurements.")] = 4,
    dtype: Annotated[str, Opt(help="float32, float16, bfloat16, float64 or int32.")] = "float32",
    warmup: Annotated[int, Opt(help="Untimed iterations per size.")] = 5,
    iters: Annotated[int, Opt(help="Back-to-back iterations in each timed burst (as nccl-tests' -n).")] = 20,
    bursts: Annotated[
        int,
        Opt(help="Timed bursts per size: the time per iteration is their median, the spread across them the noise."),
    ] = 5,
    procs: Annotated[
        Optional[int],
        Opt(help="Ranks: CPU processes, or GPUs on CUDA [default: every GPU, or 2].", show_default=False),
    ] = None,
    device: Annotated[
        str, Opt(help="auto, cpu or cuda; auto is cuda when a GPU is visible (nccl needs cuda).")
    ] = "auto",
    model: Annotated[Optional[str], Opt(help="Mark the message sizes DDP uses for this model's buckets.")] = None,
    bucket_cap_mb: Annotated[float, Opt(help="Bucket cap for --model.")] = 25.0,
    nodes: NodesOpt = 1,
    rdzv_endpoint: RdzvEndpointOpt = None,
    local_addr: LocalAddrOpt = None,
    name: Annotated[
        Optional[str],
        Opt(
            "--name",
            "--run-id",
            help="The report folder's name, the same on every node with --nodes [default: bench-<time stamp>].",
        ),
    ] = None,
    reports_dir: ReportsDirOpt = Path("reports"),
    timeout: Annotated[float, Opt(help="Seconds allowed per backend.")] = 600.0,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Time each collective at each message size, as nccl-tests does.

    From --min-bytes to --max-bytes: median, spread, algbw, busbw, correctness, alpha-beta fit."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.cli.sweep import parse_list
    from commprof.commands.bench import bench as command
    from commprof.config import BenchPlan

    backends = parse_list("--backend", backend, str)
    op_list = tuple(parse_list("--ops", ops, str))
    low = parse_size("--min-bytes", min_bytes)
    high = parse_size("--max-bytes", max_bytes) if max_bytes is not None else None
    plan = BenchPlan(
        ops=op_list,
        min_bytes=low,
        max_bytes=high,
        factor=factor,
        dtype=dtype,
        warmup=warmup,
        iters=iters,
        bursts=bursts,
    )
    outcome = command(
        plan,
        backends,
        procs=procs,
        device=device,
        nodes=nodes,
        rdzv_endpoint=rdzv_endpoint,
        local_addr=local_addr,
        model=model,
        bucket_cap_mb=bucket_cap_mb,
        name=name,
        reports_dir=reports_dir,
        timeout_s=timeout,
        feedback=ConsoleFeedback(quiet or json_out),
    )
    console.finish(outcome, quiet, json_out)
