"""A run that changes (issues 52 and 62): two hosts of the multi-host test bed (tests/netbed.py), one rank each, the
link dropped from RATE to a quarter of it once rank 0 logged AT steps of a 100-step run; with --busy, a busy loop
pinned to core 0 for the run's length (the machine busy: computation's noise hides the link). Prints the report's
whole-run stretches, changes, window check and ranks as JSON.

    python benchmarks/measure/link_drop.py [--rate 1600] [--at 40] [--busy] [--workdir DIR]"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from tests.netbed import commprof_argv, netbed  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1600, help="the link's rate before the drop, Mbit/s")
    parser.add_argument("--at", type=int, default=40, help="the drop comes once rank 0 logged this many steps")
    parser.add_argument("--workdir", type=Path, default=None, help="where the hosts write (default: a temporary one)")
    parser.add_argument("--busy", action="store_true", help="a busy loop pinned to core 0 while the run runs")
    options = parser.parse_args()
    with busy_core(options.busy):
        return drop(options)


@contextmanager
def busy_core(wanted: bool) -> Iterator[None]:
    hog = None
    if wanted:
        spin = "import os; os.sched_setaffinity(0, {0})\nwhile True: pass"
        hog = subprocess.Popen([sys.executable, "-c", spin])
    try:
        yield
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def drop(options: argparse.Namespace) -> int:
    folder = options.workdir or Path(tempfile.mkdtemp(prefix="link-drop-"))
    with netbed(2, options.rate, folder) as bed:
        args = ["run", "--nodes", "2", "--procs", "1", "--rdzv-endpoint", bed.rdzv_endpoint, "--run-id", "rd"]
        running = [
            bed.popen(h, commprof_argv(*args, "--steps", "100", "--batch-size", "8", "--quiet")) for h in bed.hosts
        ]
        steps = folder / "node0" / "traces" / "rd" / "rank0.steps.txt"
        deadline = time.monotonic() + 600
        while not (steps.exists() and len(steps.read_text().splitlines()) >= options.at):
            if time.monotonic() > deadline or any(p.poll() is not None for p in running):
                print("the run ended or stalled before the drop", file=sys.stderr)
                return 1
            time.sleep(0.5)  # polls the run's own step log
        bed.set_rate(options.rate / 4)
        for process in running:
            process.communicate(timeout=900)
        codes = [p.returncode for p in running]
    whole = json.loads((folder / "node0" / "reports" / "rd" / "report.json").read_text())["whole_run"]
    print(json.dumps({"exit": codes, **{k: whole[k] for k in ("stretches", "changes", "window", "ranks")}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
