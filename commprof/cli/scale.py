"""`commprof scale`: throughput, speedup and efficiency against world size; predictions beyond it."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import FSDP_OPTIONS, SCRIPT_KIND_OPTIONS, script_argument, with_run_options

Opt = typer.Option


@with_run_options(exclude=frozenset({"nodes", "script_output"}) | FSDP_OPTIONS | SCRIPT_KIND_OPTIONS)
def scale(
    request,
    quiet: bool,
    json_out: bool,
    script: Annotated[
        Optional[list[str]],
        script_argument(
            "run unmodified at each world size: weak scaling with its own batch per rank, or --strong with "
            "--batch-argument (--max-steps ends each launch)."
        ),
    ] = None,
    world_sizes: Annotated[
        Optional[str],
        Opt(
            help="World sizes to run, comma-separated: CPU ranks, or GPUs on this node [default: 1,2,4].",
            show_default=False,
        ),
    ] = None,
    nodes: Annotated[
        Optional[str],
        Opt(
            help="Node counts to run instead of --world-sizes, comma-separated, e.g. 1,2: each size is that many "
            "nodes of --procs (or --gpus) ranks. Run this same command on every node, with --rdzv-endpoint and "
            "--run-id; the node of rank 0 writes the reports."
        ),
    ] = None,
    strong: Annotated[
        bool,
        Opt(
            "--strong",
            help="Keep the global batch (--batch-size × the smallest size) fixed; "
            "default: weak scaling, the same --batch-size per rank.",
        ),
    ] = False,
    batch_argument: Annotated[
        Optional[str],
        Opt(
            help="With a script: its argument that holds the batch per rank, e.g. --batch-size (read for samples/s; "
            "with --strong, divided among the ranks). Without it a script's throughput is in optimizer steps of "
            "every rank per second.",
            show_default=False,
        ),
    ] = None,
    repeats: Annotated[int, Opt(help="Runs per size, interleaved (sizes up, then down).")] = 2,
    predict: Annotated[Optional[str], Opt(help="World sizes to predict, comma-separated, e.g. 16,32,64.")] = None,
    link: Annotated[
        Optional[str],
        Opt(help="Link for the prediction, e.g. 25GB/s,5us; default: fitted to the measured all-reduces."),
    ] = None,
    base_lr: Annotated[
        float, Opt(help="Learning rate at the smallest size; larger sizes get the linear scaling rule.")
    ] = 0.1,
) -> None:
    """Measure how the job scales with world size; predict beyond it.

    Runs the same workload at several world sizes: samples/s, speedup, scaling efficiency, where the step goes,
    and (with --predict) the step time, efficiency and best bucket_cap_mb at sizes not run. Across hosts:
    `commprof scale --nodes 1,2 --procs 1 --rdzv-endpoint HOST:PORT --run-id NAME` on each."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.scale import scale as command
    from commprof.values import parse_list

    outcome = command(
        dataclasses.replace(request, script=tuple(script or ())),
        parse_list("--world-sizes", world_sizes, int) if world_sizes else None,
        ConsoleFeedback(quiet),
        strong=strong,
        repeats=repeats,
        predict_sizes=parse_list("--predict", predict, int) if predict else None,
        link=link,
        base_lr=base_lr,
        node_counts=parse_list("--nodes", nodes, int) if nodes else None,
        batch_argument=batch_argument,
    )
    console.finish(outcome, quiet, json_out)
