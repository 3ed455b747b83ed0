"""The fault matrix of issue 51 on one host: each fault, on commprof's own workload (`--model
tests/data/faulty_model.py:build`) and on a plain DDP script (tests/data/scripts/faulty_script.py), run for real on
2 CPU ranks over Gloo with --timeout 10; each cell's outcome checked: the job runs to its end, or it ends within its
bound with one line naming the rank, the line of code and the kind.

    python benchmarks/check/fault_matrix.py [--workdir DIR] [--only FAULT ...]

The faults across hosts run on the multi-host test bed (tests/netbed.py: two hosts of a rank each, --timeout 15):
node1's link down, node0's (the rendezvous store's host) link down, node1's ranks killed, every process of node0
killed; each host's last line is checked, and its time from the loss to its exit (within --timeout and the grace).
Prints a Markdown
table (docs/reliability.md, "The fault matrix") and exits 1 when a cell's outcome is not the one expected."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA, commprof_argv, table_header, table_row  # noqa: E402
from commprof.launch.deadline import GRACE_S  # noqa: E402
from tests.netbed import netbed, unavailable  # noqa: E402

TIMEOUT = 10
STEP = 6  # the training step at which the fault happens
SCRIPT = TESTS_DATA / "scripts" / "faulty_script.py"
MODEL = f"{TESTS_DATA / 'faulty_model.py'}:build"
MISBEHAVE = r"faulty_model\.py:\d+ in misbehave"


@dataclass(frozen=True)
class Cell:
    fault: str
    rank: int  # the rank that misbehaves (size: the one with the larger tensor)
    expected: str | None  # the last line's pattern after "error: "; None: the job runs to its end
    bound_s: float  # it ends within this


def cells() -> list[Cell]:
    stop = TIMEOUT + GRACE_S + 30  # a collective's timeout (or the deadline), the stop and the partial report
    crash = 30.0
    matrix = [
        Cell("pause", 0, None, 120),
        Cell("pause", 1, None, 120),
        Cell(
            "hang",
            1,
            r"rank 1 is at faulty_model\.py:\d+ in misbehave \(time\.sleep\(.*\)\), outside any "
            r"collective, after step 5; rank 0 has waited",
            stop,
        ),  # fmt: skip
        Cell("kill", 1, r"rank 1 on \S+ was killed by signal 9 \(SIGKILL\)", crash),
        Cell(
            "op",
            1,
            r"the ranks' collectives part at #\d+ of the default group: .*different collectives at the "
            r"same position",
            stop,
        ),  # fmt: skip
        Cell("dtype", 1, None, 120),
    ]
    for rank in (0, 1):
        matrix.append(
            Cell(
                "extra",
                rank,
                rf"rank {rank} on \S+ was killed by signal 6 \(SIGABRT\): its collective at "
                rf"{MISBEHAVE} \(dist\.all_reduce\(torch\.ones\(1\)\)\): rank {rank}'s all_reduce of the default "
                rf"group had 1 tensor of 1 Float, 4 B; none of rank {1 - rank}'s last \d+ collectives was called from "
                r"that line: a collective that only some ranks run",
                crash,
            )  # fmt: skip
        )
        # rank 0's and rank 1's tensors: the larger on `rank`
        zero, one = ("1,000 Float, 3\\.906", "999 Float, 3\\.902")[:: 1 if rank == 0 else -1]
        matrix.append(
            Cell(
                "size",
                rank,
                rf"rank {1 - rank} on \S+ was killed by signal 6 \(SIGABRT\): its collective at "
                rf"{MISBEHAVE} .*\): rank 0's all_reduce (#\d+ )?of the default group had 1 tensor of {zero} KiB "
                rf"where rank 1's had 1 tensor of {one} KiB: tensors that differ between the ranks",
                crash,
            )  # fmt: skip
        )
    return matrix


def run_cell(cell: Cell, job: str, work: Path) -> tuple[bool, str, float]:
    """(as expected, the last line or the exit, seconds) of one cell on `job` ('workload' or 'script')."""
    steps = 300 if cell.fault == "pause" else 40  # a pause: the job runs on past --timeout and the grace after it
    run_id = f"{cell.fault}{cell.rank}-{job}"
    args = ["run", "--run-id", run_id, "--timeout", str(TIMEOUT), "--quiet", "--schedule", "1,1,2"]
    if job == "workload":
        args += ["--model", MODEL, "--steps", str(steps), "--batch-size", "8"]
    else:
        args += ["--", str(SCRIPT), str(steps)]
    env = {
        **os.environ,
        "COMMPROF_TEST_FAULT": cell.fault,
        "COMMPROF_TEST_FAULT_RANK": str(cell.rank),
        "COMMPROF_TEST_FAULT_STEP": str(STEP),
        "COMMPROF_TEST_STEP_SLEEP": "0.1" if cell.fault == "pause" else "0",
    }
    started = time.monotonic()
    done = subprocess.run(commprof_argv(*args), cwd=work, env=env, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - started
    lines = done.stderr.strip().splitlines()
    last = lines[-1] if lines else ""
    if cell.expected is None:
        return done.returncode == 0 and took <= cell.bound_s, f"exit {done.returncode}: ran to its end", took
    matched = done.returncode == 1 and re.match(r"error: " + cell.expected, last) is not None
    return matched and took <= cell.bound_s, last.split(" (worker logs:")[0], took


HOST_TIMEOUT = 15
STORE = r"node0 \(rank 0, the rendezvous store's host\)"
WHERE = r"; rank \d( has waited \d+ s in|'s last collective was) all_reduce #\d+ of the default group"
SILENT = r"nothing came from it for 15 s: a link or a host went"
GONE = r"the connection to it went \((Read error \[[\d.]+\]:\d+: Connection reset by peer|Connection closed by peer)"
HOST_CELLS: dict[tuple[int, str], list[str | None]] = {  # (host lost, how) -> each host's last line (None: killed)
    (1, "link"): [rf"node0 lost node1 \(rank 1\): {SILENT}.*{WHERE}", rf"node1 lost {STORE}: {SILENT}.*{WHERE}"],
    (0, "link"): [rf"node0 lost node1 \(rank 1\): {SILENT}.*{WHERE}", rf"node1 lost {STORE}: {SILENT}.*{WHERE}"],
    (1, "ranks"): [
        rf"node0 lost node1 \(rank 1\): {GONE}.*{WHERE}",
        r"rank 1 on node1 was killed by signal 9 \(SIGKILL\)",
    ],
    (0, "host"): [None, rf"node1 lost {STORE}: {GONE}.*{WHERE}"],
}


def run_host_cell(host: int, how: str, job: str, work: Path) -> list[tuple[bool, str, float]]:
    """(as expected, the last line, seconds from the loss to the exit) of each host, for `job` on two hosts."""
    folder = work / f"{how}{host}-{job}"
    with netbed(2, None, folder) as bed:
        args = ["run", "--nodes", "2", "--procs", "1", "--rdzv-endpoint", bed.rdzv_endpoint, "--run-id", "lost"]
        args += ["--timeout", str(HOST_TIMEOUT), "--quiet", "--schedule", "1,1,2"]
        args += (
            ["--model", MODEL, "--steps", "400", "--batch-size", "8"]
            if job == "workload"
            else ["--", str(SCRIPT), "400"]
        )
        steps = [h.folder / "traces" / "lost" / f"rank{i}.steps.txt" for i, h in enumerate(bed.hosts)]
        ready = lambda: all(s.exists() and len(s.read_text().splitlines()) >= 5 for s in steps)  # noqa: E731
        os.environ["COMMPROF_TEST_STEP_SLEEP"] = "0.05"  # the job runs on long after the loss
        try:
            ends = bed.run_and_lose(commprof_argv(*args), host, how, ready)
        finally:
            del os.environ["COMMPROF_TEST_STEP_SLEEP"]
    checked = []
    for (code, err, took), pattern in zip(ends, HOST_CELLS[(host, how)], strict=True):
        lines = err.strip().splitlines()
        last = lines[-1].split(" (worker logs:")[0] if lines else f"exit {code}"
        if pattern is None:
            checked.append((code == -9, f"exit {code}: killed with its host", took))
            continue
        ok = code == 1 and re.match(r"error: " + pattern, last) is not None and took <= HOST_TIMEOUT + GRACE_S
        checked.append((ok, last, took))
    return checked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="where the runs write (default: a temporary folder)")
    parser.add_argument("--only", nargs="*", default=None, help="these faults only (pause, hang, kill, op, ..., hosts)")
    options = parser.parse_args()
    work = options.workdir or Path(tempfile.mkdtemp(prefix="fault-matrix-"))
    work.mkdir(parents=True, exist_ok=True)
    table_header("fault", "rank", "job", "as expected", "s", "outcome")
    failed = 0
    for cell in cells():
        if options.only and cell.fault not in options.only:
            continue
        for job in ("workload", "script"):
            ok, outcome, took = run_cell(cell, job, work)
            failed += not ok
            table_row(cell.fault, cell.rank, job, "yes" if ok else "NO", f"{took:.0f}", outcome)
    if options.only and "hosts" not in options.only:
        return 1 if failed else 0
    if unavailable():
        print(f"(the faults across hosts were not run: {unavailable()})")
        return 1 if failed else 0
    print()
    table_header("host lost", "how", "job", "host", "as expected", "s after the loss", "outcome")
    for host, how in HOST_CELLS:
        for job in ("workload", "script"):
            for name, (ok, outcome, took) in zip(("node0", "node1"), run_host_cell(host, how, job, work), strict=True):
                failed += not ok
                table_row(f"node{host}", how, job, name, "yes" if ok else "NO", f"{took:.0f}", outcome)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
