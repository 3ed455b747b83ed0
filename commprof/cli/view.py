"""`commprof view`: TensorBoard with the PyTorch profiler plugin on traces/ (or one run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import JsonOpt, QuietOpt


def view(
    run: Annotated[Optional[str], typer.Argument(help="A run id under --traces-dir; default: every run.")] = None,
    traces_dir: Annotated[Path, typer.Option(help="Folder of runs written by commprof.")] = Path("traces"),
    host: Annotated[str, typer.Option(help="Address to serve on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.")] = 0,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Open a run (or all of them) in TensorBoard.

    commprof's own figures (Scalars, HParams, Text, drawn offline) next to the PyTorch Profiler plugin's
    traces."""
    from commprof.commands.view import tensorboard
    from commprof.render.tensorboard import TABS

    try:
        with tensorboard(run, traces_dir, host, port) as served:
            if json_out:
                tabs = {name: served.tab(anchor) for name, anchor, _ in TABS}
                console.out.print(
                    json.dumps({"url": served.url, "logdir": str(served.logdir), "tabs": tabs}), markup=False
                )
            elif quiet:
                console.out.print(served.url, markup=False)
            else:
                console.out.print(f"TensorBoard: {served.url} (logdir {served.logdir})", markup=False)
                for name, anchor, shows in TABS:
                    console.out.print(f"  {name} ({served.tab(anchor)}): {shows}", markup=False)
                console.out.print("Ctrl-C stops TensorBoard.", markup=False)
            sys.stdout.flush()
            served.wait()
    except KeyboardInterrupt:
        pass
