"""`commprof bench`: collective micro-benchmark per backend, in the spirit of nccl-tests."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import (
    JsonOpt,
    LocalAddrOpt,
    NodesOpt,
    QuietOpt,
    RdzvEndpointOpt,
    ReportsDirOpt,
    with_options,
)
from commprof.plans import BENCH_OPS, BenchPlan, BenchRanks

Opt = typer.Option


@with_options(BenchPlan, "plan")
@with_options(BenchRanks, "ranks")
def bench(
    plan: BenchPlan,
    ranks: BenchRanks,
    backend: Annotated[
        str, Opt(help="Backends to measure, comma-separated: gloo, nccl, mpi; auto is nccl on GPUs, gloo on CPU.")
    ] = "auto",
    ops: Annotated[str, Opt(help="Collectives, comma-separated.")] = ",".join(BENCH_OPS),
    min_bytes: Annotated[str, Opt(help="Smallest message (e.g. 1K).")] = f"{BenchPlan.min_bytes // 1024}K",
    max_bytes: Annotated[
        Optional[str], Opt(help="Largest message (e.g. 16M) [default: 1G on GPUs, 16M on CPU].", show_default=False)
    ] = None,
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
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Time each collective at each message size, as nccl-tests does.

    From --min-bytes to --max-bytes: median, spread, algbw, busbw, correctness, alpha-beta fit."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.bench import bench as command
    from commprof.values import parse_list, parse_size

    plan = dataclasses.replace(
        plan,
        ops=tuple(parse_list("--ops", ops)),
        min_bytes=parse_size("--min-bytes", min_bytes),
        max_bytes=parse_size("--max-bytes", max_bytes) if max_bytes is not None else None,
    )
    outcome = command(
        plan,
        parse_list("--backend", backend),
        ranks,
        nodes=nodes,
        rdzv_endpoint=rdzv_endpoint,
        local_addr=local_addr,
        name=name,
        reports_dir=reports_dir,
        feedback=ConsoleFeedback(quiet or json_out),
    )
    console.finish(outcome, quiet, json_out)
