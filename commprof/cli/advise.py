"""`commprof advise RUN`: the settings a run's findings predict to be faster, measured against its own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import JsonOpt, MaxStepsOpt, QuietOpt, with_options
from commprof.plans import ADVISE_TOP, SweepOptions


@with_options(SweepOptions, "options", exclude=frozenset({"max_live_settings"}))
def advise(
    run: Annotated[
        str,
        typer.Argument(help="The run: its id under --reports-dir, or its report.json (or folder).", show_default=False),
    ],
    options: SweepOptions,
    top: Annotated[int, typer.Option(help="Settings to check at most, the best predicted first.")] = ADVISE_TOP,
    run_id: Annotated[Optional[str], typer.Option(help="Name of the new run folder [default: RUN-advise].")] = None,
    reports_dir: Annotated[Path, typer.Option(help="Where the run's report is, and the new one goes.")] = Path(
        "reports"
    ),
    max_steps: MaxStepsOpt = None,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Check a run's findings by measuring the settings they advise.

    Reruns the job with each setting its findings advise (bucket_cap_mb, fp16 compression) and with its own,
    interleaved, and shows predicted against measured gain with 95% CIs."""
    from commprof.cli.progress import ConsoleFeedback
    from commprof.commands.advise import advise as command

    quiet = quiet or json_out
    feedback = ConsoleFeedback(quiet)
    outcome = command(run, reports_dir, feedback, top=top, run_id=run_id, max_steps=max_steps, options=options)
    console.finish(outcome, quiet, json_out)
