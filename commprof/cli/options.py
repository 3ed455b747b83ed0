"""The training options every launching command shares (run, sweep, tune), defined once.

`@with_run_options` appends them to a command's own parameters and hands the command a
RunRequest built from them. (This module avoids `from __future__ import annotations` so that
Typer sees real annotations.)"""

import functools
import inspect
import typing
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

Opt = typer.Option


def _run_options(
    nodes: Annotated[int, Opt(help="Number of nodes in the job; run commprof on each (needs --rdzv-endpoint).")] = 1,
    gpus: Annotated[Optional[int], Opt(help="GPUs (ranks) per node; default: every visible GPU.")] = None,
    procs: Annotated[Optional[int], Opt(help="CPU ranks per node when there is no GPU [default: 2].")] = None,
    device: Annotated[str, Opt(help="auto, cuda or cpu; auto picks cuda when a GPU is visible.")] = "auto",
    backend: Annotated[str, Opt(help="auto, nccl, gloo or mpi; auto is nccl on GPUs, gloo on CPU.")] = "auto",
    model: Annotated[str, Opt(help="mlp, transformer, convnet, mlstm, or your own: pkg.mod:build or file.py:build.")] = "mlp",
    model_size: Annotated[str, Opt(help="Size of a built-in model: small, medium or large.")] = "small",
    batch_size: Annotated[int, Opt(help="Per-rank batch size.")] = 32,
    steps: Annotated[int, Opt(help="Training steps (optimizer steps); at least wait + warmup + active.")] = 20,
    wait: Annotated[int, Opt(help="Profiler schedule: steps skipped before warming up (DDP settles in 3; "
                                  "docs/benchmarks.md).")] = 5,
    warmup: Annotated[int, Opt(help="Profiler schedule: warm-up steps (traced, then discarded).")] = 2,
    active: Annotated[int, Opt(help="Profiler schedule: steps recorded in the trace.")] = 10,
    schedule: Annotated[Optional[str], Opt(help="WAIT,WARMUP,ACTIVE in one option, e.g. 10,5,10 (overrides the three).")] = None,
    bucket_cap_mb: Annotated[float, Opt(help="DDP gradient bucket size cap in MB.")] = 25.0,
    precision: Annotated[str, Opt(help="fp32, bf16 or fp16 (autocast; fp16 adds a GradScaler).")] = "fp32",
    comm_hook: Annotated[str, Opt(help="Gradient compression hook: none, fp16 or bf16.")] = "none",
    grad_accum: Annotated[int, Opt(help="Micro-batches per step; the first N-1 run under no_sync().")] = 1,
    static_graph: Annotated[bool, Opt(help="DDP static_graph=True.")] = False,
    gradient_as_bucket_view: Annotated[bool, Opt(help="DDP gradient_as_bucket_view=True.")] = False,
    find_unused_parameters: Annotated[bool, Opt(help="DDP find_unused_parameters=True.")] = False,
    run_id: Annotated[Optional[str], Opt(help="Name of the run folder [default: time stamp + random suffix].")] = None,
    traces_dir: Annotated[Path, Opt(help="Where traces/<run-id>/ is written.")] = Path("traces"),
    reports_dir: Annotated[Path, Opt(help="Where reports/<run-id>/ is written.")] = Path("reports"),
    seed: Annotated[int, Opt(help="Seed for weights and synthetic data.")] = 0,
    rdzv_endpoint: Annotated[Optional[str], Opt(help="HOST:PORT of the c10d rendezvous, the same on every node.")] = None,
    timeout: Annotated[float, Opt(help="Seconds to wait for rendezvous and for any collective.")] = 300.0,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="No progress display and no tables; only the output paths.")] = False,
    json_out: Annotated[bool, Opt("--json", help="Print the report as JSON on stdout and nothing else there.")] = False,
) -> None:
    """Only its signature is used."""


RUN_OPTIONS = list(inspect.signature(_run_options).parameters.values())


DEFAULTS = {p.name: p.default for p in RUN_OPTIONS}


def build_request(values: dict[str, Any]):
    from commprof.config import DDPOptions, ProfileSchedule
    from commprof.launch.resolve import RunRequest

    v = {**DEFAULTS, **values}
    v.pop("json_out", None)
    cli_args = as_cli_args(values)
    sched = ProfileSchedule.parse(v.pop("schedule")) if v["schedule"] else ProfileSchedule(v["wait"], v["warmup"], v["active"])
    ddp = DDPOptions(v["bucket_cap_mb"], v["comm_hook"], v["grad_accum"], v["static_graph"], v["gradient_as_bucket_view"],
                     v["find_unused_parameters"])
    return RunRequest(
        nodes=v["nodes"], gpus=v["gpus"], procs=v["procs"], device=v["device"], backend=v["backend"], model=v["model"],
        model_size=v["model_size"], batch_size=v["batch_size"], steps=v["steps"], schedule=sched, ddp=ddp,
        precision=v["precision"], run_id=v["run_id"], traces_dir=v["traces_dir"], reports_dir=v["reports_dir"],
        seed=v["seed"], rdzv_endpoint=v["rdzv_endpoint"], timeout_s=v["timeout"], cli_args=cli_args,
    )


def as_cli_args(values: dict[str, Any]) -> tuple[str, ...]:
    """The options that differ from their defaults, as command-line tokens."""
    args: list[str] = []
    for name, value in values.items():
        if name in ("quiet", "json_out") or value == DEFAULTS.get(name, value):
            continue
        flag = "--" + name.replace("_", "-")
        args += [flag] if value is True else [f"--no-{flag[2:]}"] if value is False else [flag, str(value)]
    return tuple(args)


def with_run_options(*, exclude: frozenset[str] = frozenset()) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`command(request, quiet, **own_options)` gets every shared option (but `exclude`, which keep
    their defaults or are the command's own) as one RunRequest."""
    shared_params = [p for p in RUN_OPTIONS if p.name not in exclude]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation))
               for p in inspect.signature(command).parameters.values() if p.name not in ("request", "quiet")]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            from commprof.cli.console import set_json_mode

            shared = {p.name: kwargs.pop(p.name) for p in shared_params}
            quiet, json_out = shared.pop("quiet"), shared.pop("json_out")
            set_json_mode(json_out)
            return command(request=build_request(shared), quiet=quiet or json_out, **kwargs)

        wrapper.__signature__ = inspect.Signature(own + shared_params)  # type: ignore[attr-defined]
        return wrapper

    return decorate
