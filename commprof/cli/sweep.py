"""`commprof sweep`: several DDP (or, with --strategy fsdp, FSDP) settings measured and compared (one launch for
a built-in model; for a script, one per setting and turn)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import FSDP_OPTIONS, with_run_options
from commprof.config import PROFILE_STEPS, REPEATS, STEPS_PER_REPEAT, WARMUP_STEPS
from commprof.errors import UsageError

UNUSED = frozenset({"steps", "wait", "warmup", "active", "schedule"})  # its own schedule (--max-steps: a script's)
DDP_SWEPT = {
    "bucket_cap_mb": "1,5,10,25,50,100",
    "comm_hook": "none",
    "grad_accum": "1",
    "static_graph": "false",
    "gradient_as_bucket_view": "false",
}  # the values each is swept over by default
FSDP_SWEPT = {
    "reshard_after_forward": "true,false",
    "forward_prefetch": "0,2",
    "backward_prefetch": "1",
    "reduce_dtype": "fp32",
}
SWEPT = frozenset(DDP_SWEPT) | FSDP_OPTIONS
Opt = typer.Option


RepeatsOpt = Annotated[int, Opt(help="Interleaved repeats: in each, every setting takes its turn.")]
StepsPerRepeatOpt = Annotated[
    Optional[int],
    Opt(
        help=f"Timed steps per setting per repeat [default: {STEPS_PER_REPEAT}; with a script and --max-steps: the "
        "launch's after "
        "--warmup-steps].",
        show_default=False,
    ),
]
WarmupStepsOpt = Annotated[int, Opt(help="Untimed steps per setting first (DDP rebuilds buckets after step 1).")]
ProfileStepsOpt = Annotated[int, Opt(help="Profiled steps per setting, after the timed repeats.")]
ScriptArg = Annotated[
    Optional[list[str]],
    typer.Argument(
        help="Your training script and its arguments, after --: each setting gets launches of its own, turns "
        "interleaved, each ended after its steps (--max-steps); the baseline is the script as written.",
        show_default=False,
    ),
]
MaxLiveOpt = Annotated[
    Optional[int],
    Opt(
        help="Settings kept in memory at once (model, DDP buckets, optimizer); "
        "when fewer than all, each turn rebuilds its setting [default: as "
        "many as fit in GPU memory; all on CPU]."
    ),
]


def parse_list(option: str, text: str, convert) -> list:
    try:
        values = [convert(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{option} must be a comma-separated list, got {text!r}") from None
    if not values:
        raise UsageError(f"{option} needs at least one value")
    return values


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError(text)


CONVERT = {
    "bucket_cap_mb": float,
    "comm_hook": str,
    "grad_accum": int,
    "static_graph": _bool,
    "gradient_as_bucket_view": _bool,
    "reshard_after_forward": _bool,
    "forward_prefetch": int,
    "backward_prefetch": int,
    "reduce_dtype": str,
}


@with_run_options(exclude=SWEPT | UNUSED, swept=DDP_SWEPT | FSDP_SWEPT)
def sweep(
    request,
    quiet: bool,
    json_out: bool,
    swept_values: dict[str, str],
    script: ScriptArg = None,
    repeats: RepeatsOpt = REPEATS,
    steps_per_repeat: StepsPerRepeatOpt = None,
    warmup_steps: WarmupStepsOpt = WARMUP_STEPS,
    profile_steps: ProfileStepsOpt = PROFILE_STEPS,
    max_live_settings: MaxLiveOpt = None,
) -> None:
    """Compare DDP or FSDP settings, with confidence intervals.

    DDP's bucket size and other knobs, or FSDP's with --strategy fsdp (resharding, prefetch, reduce dtype), in
    one launch (a script: one launch per setting and turn)."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.sweep import sweep as command

    given = swept_values
    swept, other = (FSDP_SWEPT, DDP_SWEPT) if request.strategy == "fsdp" else (DDP_SWEPT, FSDP_SWEPT)
    if wrong := [flag(name) for name in other if given[name] != other[name]]:
        raise UsageError(
            f"{', '.join(wrong)}: not swept with --strategy {request.strategy} (it sweeps "
            f"{', '.join(flag(name) for name in swept)})"
        )
    grid = {name: parse_list(flag(name), given[name], CONVERT[name]) for name in swept}
    request = dataclasses.replace(request, script=tuple(script or ()))
    console.finish(
        command(
            request,
            grid,
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
