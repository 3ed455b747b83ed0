"""What the benchmark scripts share: where things are, and launching commprof as a user does (a whole process).

A script one folder down (benchmarks/<folder>/x.py) makes the package importable when run as a file with

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
    from benchmarks.common import REPO, commprof  # noqa: E402

and `python -m benchmarks.<folder>.x` from the repository root needs nothing more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the repository root
TESTS_DATA = REPO / "tests" / "data"
SHARED_TRACES = REPO.parent / "shared" / "traces"  # the real traces beside the repository
WORKLOADS = REPO / "benchmarks" / "workloads"  # the models and scripts the benchmarks run
DEEP_MLP = f"{TESTS_DATA / 'deep_mlp.py'}:build"  # a workload whose bucket size matters (128 small parameters)


def commprof_argv(*args: str) -> list[str]:
    """The command line of `commprof ARGS`, with this interpreter."""
    return [sys.executable, "-m", "commprof", *args]


def commprof(
    *args: str,
    cwd: Path | None = None,
    code: Path | None = None,
    env: Mapping[str, str] | None = None,
    capture: bool = True,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `commprof ARGS` in a fresh process and wait for it.

    cwd: where it runs (its traces/ and reports/ go there unless ARGS say otherwise); None: this process's folder.
    code: the tree whose `commprof` package it imports (put first on PYTHONPATH: this repository, or another
    version unpacked elsewhere); None: whichever this environment imports.
    env: variables set on top of this process's environment.
    capture: keep its stdout and stderr (text) on the returned process instead of printing them.
    check: on a non-zero exit, stop this script (SystemExit) with the command and, when captured, its stderr's end;
    otherwise return the process, its returncode for the caller to read."""
    environment = {**os.environ, **(env or {})}
    if code is not None:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), environment.get("PYTHONPATH")]))
    done = subprocess.run(commprof_argv(*args), cwd=cwd, env=environment, capture_output=capture, text=True)
    if check and done.returncode:
        said = f":\n{done.stderr.strip()[-2000:]}" if capture and done.stderr else ""
        where = f" ({code})" if code is not None else ""
        raise SystemExit(f"commprof {' '.join(args)}{where} failed with exit {done.returncode}{said}")
    return done


def read_report(workdir: Path, run_id: str) -> dict:
    """The report.json of run (or analysis) RUN_ID under WORKDIR/reports, as a dict."""
    return json.loads((workdir / "reports" / run_id / "report.json").read_text())


def proc_kib(pid: int, file: str, key: str) -> int:
    """A KiB figure from /proc/PID/FILE (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM)."""
    return proc_kib(pid, "status", "VmHWM:")


def children(pid: int) -> list[int]:
    """The process's child process ids (/proc/PID/task/*/children)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def table_header(*names: str) -> None:
    """A Markdown table's header, printed."""
    print("| " + " | ".join(names) + " |")
    print("|" + "---|" * len(names), flush=True)


def table_row(*cells: object) -> None:
    """One row of a Markdown table, printed at once (a long check shows its cells as they are measured)."""
    print("| " + " | ".join(str(cell) for cell in cells) + " |", flush=True)
