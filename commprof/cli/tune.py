"""`commprof tune`: find the best bucket_cap_mb with fewer trials than a full sweep."""

from __future__ import annotations

import dataclasses

from commprof.cli import console
from commprof.cli.options import FSDP_OPTIONS, with_options, with_run_options
from commprof.cli.sweep import UNUSED, ScriptArg
from commprof.plans import SweepOptions


@with_run_options(exclude=frozenset({"bucket_cap_mb", "reduce_bucket_size"}) | FSDP_OPTIONS | UNUSED)
@with_options(SweepOptions, "options")
def tune(request, quiet: bool, json_out: bool, options: SweepOptions, script: ScriptArg = None) -> None:
    """Find the best bucket size with fewer runs than a sweep.

    DDP's bucket_cap_mb, or a DeepSpeed script's reduce_bucket_size with --strategy deepspeed. A coarse log grid
    of bucket sizes, then refinement around the best; stops when the rest is noise."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.sweep import tune as command

    request = dataclasses.replace(request, script=tuple(script or ()))
    console.finish(command(request, ConsoleFeedback(quiet), options), quiet, json_out)
