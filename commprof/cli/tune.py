"""`commprof tune`: find the best bucket_cap_mb with fewer trials than a full sweep."""

from __future__ import annotations

from typing import Annotated

import typer

from commprof.cli.options import with_run_options
from commprof.cli.sweep import UNUSED

Opt = typer.Option


@with_run_options(exclude=frozenset({"bucket_cap_mb"}) | UNUSED)
def tune(
    request,
    quiet: bool,
    repeats: Annotated[int, Opt(help="Rounds in which every setting takes its turn (interleaved).")] = 5,
    steps_per_repeat: Annotated[int, Opt(help="Timed steps per setting per round.")] = 4,
    warmup_steps: Annotated[int, Opt(help="Untimed steps per setting first.")] = 3,
    profile_steps: Annotated[int, Opt(help="Profiled steps per setting.")] = 3,
) -> None:
    """Coarse log grid of bucket sizes, then refinement around the best; stops when the rest is noise."""
    import dataclasses

    from commprof.analysis.tune import COARSE_GRID_MB
    from commprof.cli.sweep import run_plan

    baseline = request.ddp
    settings = [dataclasses.replace(baseline, bucket_cap_mb=mb) for mb in COARSE_GRID_MB]
    run_plan(request, quiet, settings, baseline, "tune", repeats, steps_per_repeat, warmup_steps, profile_steps,
             tune=True)
