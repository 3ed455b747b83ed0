"""The options of every command that launches training (run, sweep, tune, compare, scale), made from
the fields of RunRequest, ProfileSchedule, DDPOptions and FSDPOptions (commprof.config), where each is declared once.

`@with_run_options` appends them to a command's own parameters and hands the command one RunRequest.
(This module avoids `from __future__ import annotations` so that Typer sees real annotations.)"""

import functools
import inspect
import types
import typing
from typing import Annotated, Any, Callable, Optional

import typer

from commprof.config import DDPOptions, FSDPOptions, ProfileSchedule, RunRequest, by_fields, option_fields


def _cli_type(hint: Any) -> Any:
    """`int | None` as Optional[int], which every Typer version reads."""
    if isinstance(hint, types.UnionType) and type(None) in hint.__args__:
        (inner,) = [a for a in hint.__args__ if a is not type(None)]
        return Optional[inner]
    return hint


def _declared() -> list[tuple[str, str, inspect.Parameter]]:
    """(owner, field name, CLI parameter) for every option field, in declaration order."""
    declared = []
    for owner in (RunRequest, ProfileSchedule, DDPOptions, FSDPOptions):
        hints = typing.get_type_hints(owner)
        for f in option_fields(owner):
            name = f.metadata["flag"] or f.name
            # made at run time (a value for Typer to read, not a type alias mypy could check)
            annotation: Any = Annotated[_cli_type(hints[f.name]), typer.Option(help=f.metadata["help"])]
            declared.append(
                (
                    owner.__name__,
                    f.name,
                    inspect.Parameter(
                        name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.default, annotation=annotation
                    ),
                )
            )
    return declared


def _extra(
    schedule: Annotated[
        Optional[str], typer.Option(help="WAIT,WARMUP,ACTIVE in one option, e.g. 10,5,10 (overrides the three).")
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress display and no tables; only the output paths.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON on stdout and nothing else there.")
    ] = False,
) -> None:
    """Options that are not fields; only its signature is used."""


DECLARED = _declared()
FIELD_OF = {p.name: field for _, field, p in DECLARED}  # CLI name -> field name
RUN_OPTIONS = [p for _, _, p in DECLARED] + list(inspect.signature(_extra).parameters.values())
DEFAULTS = {p.name: p.default for p in RUN_OPTIONS}
FSDP_OPTIONS = frozenset(f.name for f in option_fields(FSDPOptions))  # only commands that run FSDP take them


def build_request(values: dict[str, Any]) -> RunRequest:
    """The RunRequest from the options' values (missing ones at their defaults), built by keyword."""
    given = {FIELD_OF.get(name, name): value for name, value in {**DEFAULTS, **values}.items()}
    schedule = ProfileSchedule.parse(given["schedule"]) if given["schedule"] else by_fields(ProfileSchedule, given)
    return by_fields(
        RunRequest,
        given,
        schedule=schedule,
        ddp=by_fields(DDPOptions, given),
        fsdp=by_fields(FSDPOptions, given),
        cli_args=as_cli_args(values),
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
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(command).parameters.values()
            if p.name not in ("request", "quiet")
        ]

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
