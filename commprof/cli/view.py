"""`commprof view`: TensorBoard with the PyTorch profiler plugin on traces/ (or one run)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console

_URL = re.compile(r"(http://[^\s/]+:\d+)/")


def view(
    run: Annotated[Optional[str], typer.Argument(help="A run id under --traces-dir; default: every run.")] = None,
    traces_dir: Annotated[Path, typer.Option(help="Folder of runs written by commprof.")] = Path("traces"),
    host: Annotated[str, typer.Option(help="Address to serve on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help='Print {"url": ...} on stdout once serving.')] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the URL.")] = False,
) -> None:
    """Open the traces in TensorBoard's PyTorch Profiler plugin (its Distributed view shows overlap per worker)."""
    from commprof.errors import RunFailed, UsageError

    if not 0 <= port < 65536:
        raise UsageError(f"--port must be 0..65535, got {port}")
    logdir = traces_dir / run if run else traces_dir
    if not logdir.is_dir():
        raise UsageError(f"{logdir}: no such folder (run `commprof run` first, or pass --traces-dir)")
    if not any(logdir.rglob("*.pt.trace.json*")):
        raise UsageError(f"{logdir}: no profiler traces (*.pt.trace.json) in this folder")
    process = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", host,
                                "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = _wait_for_url(process)
        if url is None:
            raise RunFailed(f"TensorBoard did not start (exit code {process.wait()})")
        page = f"{url}/#pytorch_profiler"
        if json_out:
            console.out.print(json.dumps({"url": page, "logdir": str(logdir)}), markup=False)
        elif quiet:
            console.out.print(page, markup=False)
        else:
            console.out.print(f"TensorBoard: {page}", markup=False)
            console.out.print("Open it, pick a run and choose the view 'Distributed' (computation/communication "
                              "overlap per worker). The plugin's charts load a chart library from the internet; "
                              "offline, open reports/<run-id>/report.html instead. Ctrl-C stops TensorBoard.",
                              markup=False)
        sys.stdout.flush()
        for _ in process.stderr:  # keep draining TensorBoard's log so it never blocks
            pass
        process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)


def _wait_for_url(process: subprocess.Popen) -> str | None:
    """TensorBoard prints 'TensorBoard x.y at http://host:port/' once it is serving."""
    for line in process.stderr:
        match = _URL.search(line)
        if match and "TensorBoard" in line:
            return match.group(1)
    return None
