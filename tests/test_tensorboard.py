"""TensorBoard with the PyTorch profiler plugin loads commprof's traces, Distributed view included."""

import json
import re
import selectors
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
PLUGIN = "/data/plugin/pytorch_profiler"
DEADLINE_S = 90


def _wait_for_url(proc: subprocess.Popen) -> str:
    """Read TensorBoard's output until it prints the address it bound (it picks a free port)."""
    selector = selectors.DefaultSelector()
    selector.register(proc.stderr, selectors.EVENT_READ)
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end and proc.poll() is None:
        if selector.select(timeout=1):
            line = proc.stderr.readline()
            match = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
            if match:
                return match.group(1)
    raise AssertionError("TensorBoard did not start")


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def test_profiler_plugin_lists_run_and_distributed_view(cpu_run):
    cwd, _ = cpu_run
    logdir = Path(cwd) / "traces" / "e2e"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = _wait_for_url(proc) + PLUGIN
        end = time.monotonic() + DEADLINE_S
        runs = _get(base + "/runs")
        while (runs["loading"] or not runs["runs"]) and time.monotonic() < end:
            time.sleep(0.2)  # polling the plugin's own 'loading' flag, bounded by the deadline
            runs = _get(base + "/runs")
        assert len(runs["runs"]) == 1
        run = urllib.request.quote(runs["runs"][0])
        views = _get(f"{base}/views?run={run}")
        assert "Distributed" in views and "Overview" in views
        workers = _get(f"{base}/workers?run={run}&view=Overview")
        assert sorted(workers) == ["rank0", "rank1"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
