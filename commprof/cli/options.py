"""The options of every command that launches training (run, sweep, tune, compare, scale), made from
the fields of RunRequest, ProfileSchedule (commprof.config), DDPOptions, FSDPOptions and DeepSpeedOptions
(commprof.settings), where each is declared once.

`@with_run_options` appends them to a command's own parameters and hands the command one RunRequest.
(This module avoids `from __future__ import annotations` so that Typer sees real annotations.)"""

import functools
import inspect
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from commprof.cli.console import stdout_for_the_result
from commprof.config import ProfileSchedule, RunRequest, by_fields, option_fields
from commprof.settings import DDPOptions, DeepSpeedOptions, FSDPOptions, HorovodOptions

SETTING_KINDS = (DDPOptions, FSDPOptions, DeepSpeedOptions, HorovodOptions)


def _cli_type(hint: Any) -> Any:
    """`int | None` as Optional[int], which every Typer version reads."""
    if isinstance(hint, types.UnionType) and type(None) in hint.__args__:
        (inner,) = [a for a in hint.__args__ if a is not type(None)]
        return Optional[inner]
    return hint


def _typer_option(help: str, default: Any, shown: str | None = None) -> Any:
    """A flag (--x / --no-x) is off unless given: its help says only a default that is on. `shown`: the default in
    words, where the value alone would mislead."""
    if isinstance(default, bool):
        return typer.Option(help=help + (" [default: on]" if default else ""), show_default=False)
    return typer.Option(help=help, show_default=shown if shown else True)


def declared_parameters(owner: type, exclude: frozenset[str] = frozenset()) -> list[tuple[str, inspect.Parameter]]:
    """(field name, CLI parameter) for every option field of `owner` but `exclude`, in declaration order."""
    hints = typing.get_type_hints(owner)
    declared = []
    for f in option_fields(owner):
        if f.name in exclude:
            continue
        # made at run time (a value for Typer to read, not a type alias mypy could check)
        typer_option = _typer_option(f.metadata["help"], f.default, f.metadata.get("shown"))
        annotation: Any = Annotated[_cli_type(hints[f.name]), typer_option]
        name = f.metadata["flag"] or f.name
        parameter = inspect.Parameter(
            name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.default, annotation=annotation
        )
        declared.append((f.name, parameter))
    return declared


def _declared() -> list[tuple[str, str, inspect.Parameter]]:
    """(owner, field name, CLI parameter) for every run option field, in declaration order."""
    return [
        (owner.__name__, name, parameter)
        for owner in (RunRequest, ProfileSchedule, *SETTING_KINDS)
        for name, parameter in declared_parameters(owner)
    ]


def with_options(
    owner: type, argument: str, exclude: frozenset[str] = frozenset()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Appends the option fields of `owner` (but `exclude`, left at their defaults) to a command's own parameters,
    and hands the command one `owner` made from them as its parameter `argument`: options declared once, in
    `owner` (commprof.plans' SweepOptions, BenchPlan), with their defaults, help and validation."""
    declared = declared_parameters(owner, exclude)

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(command).parameters.values()
            if p.name != argument
        ]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            values = {name: kwargs.pop(parameter.name) for name, parameter in declared}
            return command(**{argument: owner(**values)}, **kwargs)

        wrapper.__signature__ = inspect.Signature([*own, *(p for _, p in declared)])  # type: ignore[attr-defined]
        return wrapper

    return decorate


# --quiet and --json, declared here once for every command
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="No progress display and no tables: only what a script would read back, the output paths or the "
        "command's one answer (report: the headline; view: the URL; diff: the changes beyond the noise; "
        "backends: the matrix).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="The result as JSON on stdout, and nothing else there.")]


def script_argument(what: str) -> Any:
    """A user's training script and its arguments, after `--`; `what`: what the command does with it."""
    return typer.Argument(help=f"Your training script and its arguments, after --: {what}", show_default=False)


ReportsDirOpt = Annotated[Path, typer.Option(help="Where reports/<name>/ is written.")]


def _extra(
    schedule: Annotated[
        Optional[str], typer.Option(help="WAIT,WARMUP,ACTIVE in one option, e.g. 10,5,10 (overrides the three).")
    ] = None,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Options that are not fields; only its signature is used."""


DECLARED = _declared()
FIELD_OF = {p.name: field for _, field, p in DECLARED}  # CLI name -> field name


def declared_option(field_name: str) -> Any:
    """A run option as RunRequest declares it, for a command that takes it without the others."""
    return next(p.annotation for _, field, p in DECLARED if field == field_name)


MaxStepsOpt: Any = declared_option("max_steps")  # advise
# bench, across nodes
NodesOpt: Any = declared_option("nodes")
RdzvEndpointOpt: Any = declared_option("rdzv_endpoint")
LocalAddrOpt: Any = declared_option("local_addr")
HELP_OF = {f.name: f.metadata["help"] for owner in SETTING_KINDS for f in option_fields(owner)}


def _one_value(name: str) -> str:
    """An option's help as one value's: the default its own flag states is not a swept list's."""
    return re.sub(r" \[default: [^\]]*\]\.$", ".", HELP_OF[name])


def swept_options(defaults: dict[str, str]) -> list[inspect.Parameter]:
    """The comma-separated lists a sweep compares, one per swept run option, named and explained as that option
    is (its declaration in commprof.config); `defaults`: the values each is swept over by default."""
    return [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=default,
            annotation=Annotated[str, typer.Option(help=f"Values to compare, comma-separated. {_one_value(name)}")],
        )
        for name, default in defaults.items()
    ]


RUN_OPTIONS = [p for _, _, p in DECLARED] + list(inspect.signature(_extra).parameters.values())
DEFAULTS = {p.name: p.default for p in RUN_OPTIONS}
FSDP_OPTIONS = frozenset(f.name for f in option_fields(FSDPOptions))  # only commands that run FSDP take them
DEEPSPEED_OPTIONS = frozenset(f.name for f in option_fields(DeepSpeedOptions))  # only those that run a script
HOROVOD_OPTIONS = frozenset(f.name for f in option_fields(HorovodOptions))  # likewise
SCRIPT_KIND_OPTIONS = DEEPSPEED_OPTIONS | HOROVOD_OPTIONS  # the settings of a kind only a script builds


def build_request(values: dict[str, Any], named: frozenset[str] = frozenset()) -> RunRequest:
    """The RunRequest from the options' values (missing ones at their defaults), built by keyword. `named`: the
    options the command line named, even at their default (a script's DDP gets those of DDP's arguments: its own
    `bucket_cap_mb=100` becomes 25 with --bucket-cap-mb 25; one that makes no sense with a script is refused)."""
    given = {FIELD_OF.get(name, name): value for name, value in {**DEFAULTS, **values}.items()}
    schedule = ProfileSchedule.parse(given["schedule"]) if given["schedule"] else by_fields(ProfileSchedule, given)
    return by_fields(
        RunRequest,
        given,
        schedule=schedule,
        ddp=by_fields(DDPOptions, given),
        fsdp=by_fields(FSDPOptions, given),
        deepspeed=by_fields(DeepSpeedOptions, given),
        horovod=by_fields(HorovodOptions, given),
        cli_args=as_cli_args(values),
        named=tuple(sorted(FIELD_OF.get(name, name) for name in named)),
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


def with_run_options(
    *, exclude: frozenset[str] = frozenset(), swept: dict[str, str] | None = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`command(request, quiet, json_out, **own_options)` gets every shared option (but `exclude`, which keep
    their defaults or are the command's own) as one RunRequest; `quiet` is true with --json too. `swept`: the run
    options a sweep compares, each offered as a list of values (swept_options) and handed over as
    `swept_values={name: text}`."""
    shared_params = [p for p in RUN_OPTIONS if p.name not in exclude]
    list_params = swept_options(swept or {})

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(command).parameters.values()
            if p.name not in ("request", "quiet", "json_out", "swept_values")
        ]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            shared = {p.name: kwargs.pop(p.name) for p in shared_params}
            quiet, json_out = shared.pop("quiet"), shared.pop("json_out")
            lists = {"swept_values": {p.name: kwargs.pop(p.name) for p in list_params}} if swept else {}
            request = build_request(shared, _named_on_command_line(kwargs.pop(CONTEXT.name), shared))
            with stdout_for_the_result(json_out):
                return command(request=request, quiet=quiet or json_out, json_out=json_out, **lists, **kwargs)

        parameters = [CONTEXT, *own, *list_params, *shared_params]
        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        return wrapper

    return decorate


CONTEXT = inspect.Parameter("command_line", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)


def _named_on_command_line(context: typer.Context, names: dict[str, Any]) -> frozenset[str]:
    """Those of `names` the command line (or an environment variable) gave, rather than left at their defaults."""
    given = ("COMMANDLINE", "ENVIRONMENT")
    return frozenset(name for name in names if getattr(context.get_parameter_source(name), "name", None) in given)
