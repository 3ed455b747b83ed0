"""`commprof tune`: find the best bucket_cap_mb with fewer trials than a full sweep."""

from __future__ import annotations

import dataclasses

from commprof.cli import console
from commprof.cli.options import FSDP_OPTIONS, with_run_options
from commprof.cli.sweep import (
    UNUSED,
    MaxLiveOpt,
    ProfileStepsOpt,
    RepeatsOpt,
    ScriptArg,
    StepsPerRepeatOpt,
    WarmupStepsOpt,
)
from commprof.config import PROFILE_STEPS, REPEATS, WARMUP_STEPS


@with_run_options(exclude=frozenset({"bucket_cap_mb"}) | FSDP_OPTIONS | UNUSED)
def tune(
    request,
    quiet: bool,
    json_out: bool,
    script: ScriptArg = None,
    repeats: RepeatsOpt = REPEATS,
    steps_per_repeat: StepsPerRepeatOpt = None,
    warmup_steps: WarmupStepsOpt = WARMUP_STEPS,
    profile_steps: ProfileStepsOpt = PROFILE_STEPS,
    max_live_settings: MaxLiveOpt = None,
) -> None:
    """Find the best bucket_cap_mb with fewer runs than a sweep.

    A coarse log grid of bucket sizes, then refinement around the best; stops when the rest is noise."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.sweep import tune as command

    request = dataclasses.replace(request, script=tuple(script or ()))
    console.finish(
        command(
            request,
            ConsoleFeedback(quiet),
            repeats=repeats,
            steps_per_repeat=steps_per_repeat,
            warmup_steps=warmup_steps,
            profile_steps=profile_steps,
            max_live_settings=max_live_settings,
        ),
        quiet,
        json_out,
    )
