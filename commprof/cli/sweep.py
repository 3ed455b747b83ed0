"""`commprof sweep`: measure several DDP settings in one launch and compare them."""

from __future__ import annotations

import itertools
from typing import Annotated

import typer

from commprof.cli import console
from commprof.cli.options import with_run_options

SWEPT = frozenset({"bucket_cap_mb", "comm_hook", "grad_accum", "static_graph", "gradient_as_bucket_view"})
UNUSED = frozenset({"steps", "wait", "warmup", "active", "schedule"})  # a sweep has its own schedule
Opt = typer.Option


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
    bucket_cap_mb: Annotated[str, Opt(help="Bucket caps in MB to compare, comma-separated.")] = "1,5,10,25,50,100",
    comm_hook: Annotated[str, Opt(help="Gradient compression hooks to compare: none, fp16, bf16.")] = "none",
    grad_accum: Annotated[str, Opt(help="Micro-batches per step to compare (no_sync for all but the last).")] = "1",
    static_graph: Annotated[str, Opt(help="static_graph values to compare: false, true.")] = "false",
    gradient_as_bucket_view: Annotated[str, Opt(help="gradient_as_bucket_view values to compare.")] = "false",
    repeats: Annotated[int, Opt(help="Rounds in which every setting takes its turn (interleaved).")] = 5,
    steps_per_repeat: Annotated[int, Opt(help="Timed steps per setting per round.")] = 4,
    warmup_steps: Annotated[int, Opt(help="Untimed steps per setting first (DDP rebuilds buckets after step 1).")] = 3,
    profile_steps: Annotated[int, Opt(help="Profiled steps per setting, after the timed rounds.")] = 3,
) -> None:
    """Compare DDP settings (bucket size and other knobs) in one launch, with confidence intervals."""
    from commprof.config import DDPOptions

    grid = itertools.product(
        parse_list("--bucket-cap-mb", bucket_cap_mb, float), parse_list("--comm-hook", comm_hook, str),
        parse_list("--grad-accum", grad_accum, int), parse_list("--static-graph", static_graph, _bool),
        parse_list("--gradient-as-bucket-view", gradient_as_bucket_view, _bool))
    settings = [DDPOptions(cap, hook, accum, static, view) for cap, hook, accum, static, view in grid]
    run_plan(request, quiet, settings, DDPOptions(), "sweep", repeats, steps_per_repeat, warmup_steps, profile_steps)


def run_plan(request, quiet: bool, settings, baseline, kind: str, repeats: int, steps_per_repeat: int,
             warmup_steps: int, profile_steps: int, tune: bool = False) -> None:
    """Resolve, check the model, launch the sweep worker once, analyse every setting, report."""
    from commprof.cli.common import check_model, launch_with_progress, write_and_show
    from commprof.config import SweepPlan, setting_label
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.worker.sweep import sweep_main
    from commprof.pipeline import sweep_report

    if baseline not in settings:
        settings = [*settings, baseline]
        console.info(f"added the default {setting_label(baseline)} as the baseline", quiet)
    config = resolve(request, MachineProbe.detect())
    plan = SweepPlan(config, tuple(settings), baseline, warmup_steps, repeats, steps_per_repeat, profile_steps, tune)
    workload = check_model(config)
    console.info(f"{kind} {config.run_id}: {workload.name} ({workload.parameter_count:,} parameters) on "
                 f"{config.world_size} {config.device} rank(s), {config.backend}; "
                 f"{len(settings)} settings x {repeats} interleaved rounds", quiet)
    per_setting = warmup_steps + repeats * steps_per_repeat + profile_steps + 1
    result = launch_with_progress(config, per_setting * len(settings), quiet, entrypoint=sweep_main,
                                  payload=plan.to_dict())
    if not result.has_rank_zero:
        console.info(f"ranks {', '.join(map(str, result.ranks_here))} done; the node with rank 0 writes the report", quiet)
        return
    write_and_show(sweep_report(result.run_dir, result.run_id, kind), config.reports_dir, quiet, traces=result.run_dir)
