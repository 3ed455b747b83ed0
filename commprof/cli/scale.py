"""`commprof scale`: throughput, speedup and efficiency against world size; predictions beyond it."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import FSDP_OPTIONS, SCRIPT_KIND_OPTIONS, script_argument, with_options, with_run_options
from commprof.plans import DEFAULT_WORLD_SIZES, ScaleOptions

Opt = typer.Option


@with_run_options(exclude=frozenset({"nodes", "script_output"}) | FSDP_OPTIONS | SCRIPT_KIND_OPTIONS)
@with_options(ScaleOptions, "options")
def scale(
    request,
    quiet: bool,
    json_out: bool,
    options: ScaleOptions,
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
            help="World sizes to run, comma-separated: CPU ranks, or GPUs on this node "
            f"[default: {','.join(map(str, DEFAULT_WORLD_SIZES))}].",
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
    predict: Annotated[Optional[str], Opt(help="World sizes to predict, comma-separated, e.g. 16,32,64.")] = None,
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
        options,
        predict_sizes=parse_list("--predict", predict, int) if predict else None,
        node_counts=parse_list("--nodes", nodes, int) if nodes else None,
    )
    console.finish(outcome, quiet, json_out)
