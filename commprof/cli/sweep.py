"""`commprof sweep`: several DDP settings measured and compared (one launch for a built-in model; for a
script, one per setting and turn)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import with_run_options

UNUSED = frozenset({"steps", "wait", "warmup", "active", "schedule", "max_steps"})  # its own schedule
SWEPT = frozenset({"bucket_cap_mb", "comm_hook", "grad_accum", "static_graph", "gradient_as_bucket_view"})
Opt = typer.Option
RepeatsOpt = Annotated[int, Opt(help="Rounds in which every setting takes its turn (interleaved).")]
StepsPerRepeatOpt = Annotated[int, Opt(help="Timed steps per setting per round.")]
WarmupStepsOpt = Annotated[int, Opt(help="Untimed steps per setting first (DDP rebuilds buckets after step 1).")]
ProfileStepsOpt = Annotated[int, Opt(help="Profiled steps per setting, after the timed rounds.")]
ScriptArg = Annotated[Optional[list[str]], typer.Argument(
    help="Your training script and its arguments, after --: each setting gets launches of its own with "
         "--max-steps, turns interleaved.", show_default=False)]
MaxLiveOpt = Annotated[Optional[int], Opt(help="Settings kept in memory at once (model, DDP buckets, optimizer); "
                                               "when fewer than all, each turn rebuilds its setting \\[default: as "
                                               "many as fit in GPU memory; all on CPU].")]


def parse_list(option: str, text: str, convert) -> list:
    from commprof.errors import UsageError

    try:
        values = [convert(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{option} must be a comma-separated list, got {text!r}") from None
    if not values:
        raise UsageError(f"{option} needs at least one value")
    return values


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError(text)


@with_run_options(exclude=SWEPT | UNUSED)
def sweep(
    request,
    quiet: bool,
    script: ScriptArg = None,
    bucket_cap_mb: Annotated[str, Opt(help="Bucket caps in MB to compare, comma-separated.")] = "1,5,10,25,50,100",
    comm_hook: Annotated[str, Opt(help="Gradient compression hooks to compare: none, fp16, bf16.")] = "none",
    grad_accum: Annotated[str, Opt(help="Micro-batches per step to compare (no_sync for all but the last).")] = "1",
    static_graph: Annotated[str, Opt(help="static_graph values to compare: false, true.")] = "false",
    gradient_as_bucket_view: Annotated[str, Opt(help="gradient_as_bucket_view values to compare.")] = "false",
    repeats: RepeatsOpt = 5,
    steps_per_repeat: StepsPerRepeatOpt = 4,
    warmup_steps: WarmupStepsOpt = 3,
    profile_steps: ProfileStepsOpt = 3,
    max_live_settings: MaxLiveOpt = None,
) -> None:
    """Compare DDP settings (bucket size and other knobs) in one launch, with confidence intervals."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.sweep import sweep as command

    grid = {"bucket_cap_mb": parse_list("--bucket-cap-mb", bucket_cap_mb, float),
            "comm_hook": parse_list("--comm-hook", comm_hook, str),
            "grad_accum": parse_list("--grad-accum", grad_accum, int),
            "static_graph": parse_list("--static-graph", static_graph, _bool),
            "gradient_as_bucket_view": parse_list("--gradient-as-bucket-view", gradient_as_bucket_view, _bool)}
    request = dataclasses.replace(request, script=tuple(script or ()))
    console.finish(command(request, grid, ConsoleFeedback(quiet), repeats=repeats, steps_per_repeat=steps_per_repeat,
                           warmup_steps=warmup_steps, profile_steps=profile_steps,
                           max_live_settings=max_live_settings), quiet)
