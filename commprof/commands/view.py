"""`commprof view`: TensorBoard with the PyTorch profiler plugin on traces/ (or one run)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from commprof.errors import RunFailed, UsageError
from commprof.launch.module_argv import module_argv

_URL = re.compile(r"(http://[^\s/]+:\d+)/")


@dataclass(frozen=True)
class Served:
    url: str  # TensorBoard's root
    logdir: Path
    process: subprocess.Popen[str]

    def tab(self, anchor: str) -> str:
        return f"{self.url}/{anchor}"

    def wait(self) -> None:
        """Until TensorBoard stops (Ctrl-C), draining its log so that it never blocks."""
        assert self.process.stderr is not None  # started with stderr=PIPE
        for _ in self.process.stderr:
            pass
        self.process.wait()


@contextmanager
def tensorboard(run: str | None, traces_dir: Path, host: str = "127.0.0.1", port: int = 0) -> Iterator[Served]:
    """TensorBoard serving the traces of one run (or all of them), stopped when the block ends."""
    if not 0 <= port < 65536:
        raise UsageError(f"--port must be 0..65535, got {port}")
    logdir = traces_dir / run if run else traces_dir
    if not logdir.is_dir():
        raise UsageError(f"{logdir}: no such folder (run `commprof run` first, or pass --traces-dir)")
    if not any(logdir.rglob("*.pt.trace.json*")) and not any(logdir.rglob("events.out.tfevents.*")):
        raise UsageError(f"{logdir}: {_why_nothing(logdir)}")
    process = subprocess.Popen(
        module_argv(
            "commprof.render.offline_tensorboard", "--logdir", str(logdir), "--host", host, "--port", str(port)
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: stopped with what it starts, whatever they do with Ctrl-C
    )
    # Terminated (kill, a batch system, a test), commprof unwinds through `finally` and stops TensorBoard too,
    # instead of leaving it serving, and reloading the traces, with nobody to stop it.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        url = _wait_for_url(process)
        if url is None:
            raise RunFailed(f"TensorBoard did not start (exit code {process.wait()})")
        yield Served(url, logdir, process)
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop_group(process)


def stop_group(process: subprocess.Popen, grace_s: float = 10) -> None:
    """TensorBoard and what it started (the profiler plugin's loader processes, multiprocessing's resource tracker,
    which may ignore Ctrl-C and keep TensorBoard waiting): its process group asked to stop, then killed."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue
        break
    try:
        os.killpg(process.pid, signal.SIGKILL)  # what it left behind in its group
    except ProcessLookupError:
        pass


def _why_nothing(logdir: Path) -> str:
    """A run that ended before its profiler recorded anything says so; any other folder has no traces."""
    from commprof.launch.runlog import read_run_json

    record = read_run_json(logdir)
    if record is None or record.status not in ("interrupted", "failed"):
        return "no profiler traces (*.pt.trace.json) or TensorBoard event files in this folder"
    from commprof.commands.unfinished import steps_done
    from commprof.render.unfinished_words import nothing_to_view

    steps = steps_done(record.config, record.steps_completed or 0)
    return nothing_to_view(record.run_id, record.status, steps, record.config.schedule.profiled_steps)


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _wait_for_url(process: subprocess.Popen[str]) -> str | None:
    """TensorBoard prints 'TensorBoard x.y at http://host:port/' once it is serving."""
    assert process.stderr is not None  # started with stderr=PIPE
    for line in process.stderr:
        match = _URL.search(line)
        if match and "TensorBoard" in line:
            return match.group(1)
    return None
