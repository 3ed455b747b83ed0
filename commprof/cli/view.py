"""`commprof view`: TensorBoard with the PyTorch profiler plugin on traces/ (or one run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console


def view(
    run: Annotated[Optional[str], typer.Argument(help="A run id under --traces-dir; default: every run.")] = None,
    traces_dir: Annotated[Path, typer.Option(help="Folder of runs written by commprof.")] = Path("traces"),
    host: Annotated[str, typer.Option(help="Address to serve on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help='Print {"url": ...} on stdout once serving.')] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the URL.")] = False,
) -> None:
    """Open the traces in TensorBoard's PyTorch Profiler plugin (its Distributed view shows overlap per worker)."""
    from commprof.commands.view import tensorboard

    try:
        with tensorboard(run, traces_dir, host, port) as served:
            if json_out:
                console.out.print(json.dumps({"url": served.url, "logdir": str(served.logdir)}), markup=False)
            elif quiet:
                console.out.print(served.url, markup=False)
            else:
                console.out.print(f"TensorBoard: {served.url}", markup=False)
                console.out.print("Open it, pick a run and choose the view 'Distributed' (computation/communication "
                                  "overlap per worker). The plugin's charts load a chart library from the internet; "
                                  "offline, open reports/<run-id>/report.html instead. Ctrl-C stops TensorBoard.",
                                  markup=False)
            sys.stdout.flush()
            served.wait()
    except KeyboardInterrupt:
        pass
