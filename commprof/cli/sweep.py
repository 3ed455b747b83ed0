"""`commprof sweep`: several DDP (or, with --strategy fsdp, FSDP; with --strategy deepspeed, a DeepSpeed script's
ZeRO) settings measured and compared (one launch for a built-in model; for a script, one per setting and turn)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import FSDP_OPTIONS, SCRIPT_KIND_OPTIONS, with_options, with_run_options
from commprof.plans import DDP_SWEPT, DEEPSPEED_SWEPT, FSDP_SWEPT, HOROVOD_SWEPT, SweepOptions

UNUSED = frozenset({"steps", "wait", "warmup", "active", "schedule"})  # its own schedule (--max-steps: a script's)
SWEPT = frozenset(DDP_SWEPT) | FSDP_OPTIONS | SCRIPT_KIND_OPTIONS
ScriptArg = Annotated[
    Optional[list[str]],
    typer.Argument(
        help="Your training script and its arguments, after --: each setting gets launches of its own, turns "
        "interleaved, each ended after its steps (--max-steps); the baseline is the script as written.",
        show_default=False,
    ),
]


@with_run_options(exclude=SWEPT | UNUSED, swept=DDP_SWEPT | FSDP_SWEPT | DEEPSPEED_SWEPT | HOROVOD_SWEPT)
@with_options(SweepOptions, "options")
def sweep(
    request,
    quiet: bool,
    json_out: bool,
    swept_values: dict[str, str],
    options: SweepOptions,
    script: ScriptArg = None,
) -> None:
    """Compare DDP, FSDP or ZeRO settings, with confidence intervals.

    DDP's bucket size and other knobs, FSDP's with --strategy fsdp (resharding, prefetch, reduce dtype), in one
    launch (a script: one launch per setting and turn); a DeepSpeed script's ZeRO options with --strategy deepspeed
    (stage, reduce and all-gather bucket sizes, overlap_comm; "own": as its config has it), set in its config."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.sweep import sweep as command

    request = dataclasses.replace(request, script=tuple(script or ()))
    console.finish(command(request, swept_values, ConsoleFeedback(quiet), options), quiet, json_out)
