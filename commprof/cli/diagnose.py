"""`commprof diagnose DUMPS`: where a stuck or desynchronised job's ranks were, from the evidence it left."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from commprof.cli import console


def diagnose(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Folders (and the folders in them) or files: torch Flight Recorder dumps, one per rank, its "
            "number last in the file's name (as TORCH_FR_DUMP_TEMP_FILE=<prefix> names them); the job's logs "
            "(.log, .txt, .out, .err: a SLURM output file, torchrun's --log-dir) where NCCL's watchdog wrote "
            "'Watchdog caught collective operation timeout'; or the hang_rank<N>.json a commprof launch keeps in "
            "traces/<run>/logs/<host>/.",
            show_default=False,
        ),
    ],
) -> None:
    """Where a hung job's ranks were: who is behind, at which line.

    For jobs commprof did not launch (torchrun, SLURM, mpirun). Read as data: a dump that names any code is refused
    before anything in it runs. To make a job leave dumps, give every rank TORCH_FR_BUFFER_SIZE=2000
    TORCH_FR_DUMP_TEMP_FILE=<shared folder>/fr_rank_ TORCH_NCCL_DUMP_ON_TIMEOUT=1: NCCL writes one per rank when a
    collective times out. Without dumps, NCCL's watchdog lines in the logs say which collective each rank timed out
    in (no dtype or line: those need the dumps). `commprof run` finds the same by itself when its job fails."""
    from commprof.commands.diagnose import diagnose as command
    from commprof.render.hang_words import diagnosis_text

    said = diagnosis_text(*command(paths))
    console.out.print(said, markup=False, highlight=False, emoji=False, soft_wrap=True)
