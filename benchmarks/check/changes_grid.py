"""The changes' control grid (issue 62, item 4): the whole run cut into stretches at its change points, checked
against runs whose truth is known. Each scenario of tests/data/scripts/stretches.py (its docstring holds each truth:
none, step, comm, stretch, two, startup) x {a quiet machine, a CPU hog: a busy loop pinned to core 0 for the run's
length} x 3 repeats is a real `commprof run` on 2 CPU ranks over Gloo, whose report.json's `whole_run.changes` and
`whole_run.stretches` are compared with the truth: a claimed change matches a true one of its kind (a change of the
step, or of the communication alone) within 3 steps, each true one matched once; a stretch's late rank is right where
the true stretch it overlaps most had that rank late, false where it had another or none, missed where no stretch
over a true one names its rank. The profiled window is placed at steps 101-108 (--schedule 100,2,5), past every
true change (the analysis leaves the window's steps out, and the first 3).

    python benchmarks/check/changes_grid.py [--workdir DIR] [--repeats N] [--only SCENARIO] [--quiet-only]

Prints Markdown tables, each cell and then precision and recall per claim (docs/semantics.md, "The changes' control
grid"), and exits 1 when a run fails, any claim is made on the `none` rows, or any cell misses part of its truth.
Run it on an otherwise idle machine: another job's load changes the run for real, where no truth planted a change
(the column `beside` says how many cores other sessions' processes used during each run)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA, commprof_argv, table_header, table_row  # noqa: E402

SCRIPT = TESTS_DATA / "scripts" / "stretches.py"
STEPS = 120  # the script's default
SCHEDULE = (100, 2, 5)  # wait, warm-up, active: the profiler slows steps 101-108 (its window and the step after it)
LEFT_OUT = {*range(1, 4), *range(SCHEDULE[0] + 1, sum(SCHEDULE) + 2)}  # steps the analysis does not weigh
TOLERANCE = 3  # steps between a claimed change and a true one
KINDS = ("step change", "communication change", "late rank")
MACHINES = ("quiet", "hog")
HOG = "import os\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass\n"


@dataclass(frozen=True)
class Truth:
    steps: tuple[int, ...] = ()  # the first step after each change of the step
    comm: tuple[int, ...] = ()  # the first step after each change of the communication alone
    late: tuple[tuple[int, int, int], ...] = ()  # (first step, last step, rank) of each stretch with a late rank

    def stretches(self, steps: int) -> list[tuple[int, int, int | None]]:
        """The true stretches of a run of `steps` steps: (first, last, late rank or None)."""
        cuts = [1, *self.steps, steps + 1]
        ranks = {(first, last): rank for first, last, rank in self.late}
        return [(a, b - 1, ranks.get((a, b - 1))) for a, b in zip(cuts, cuts[1:], strict=False)]


TRUTHS = {  # tests/data/scripts/stretches.py's docstring
    "none": Truth(),
    "step": Truth(steps=(60,)),
    "comm": Truth(comm=(60,)),
    "stretch": Truth(steps=(40, 80), late=((40, 79, 0),)),
    "two": Truth(steps=(25, 45, 75, 95), late=((25, 44, 0), (75, 94, 1))),
    "startup": Truth(steps=(21,)),
}


@dataclass
class Count:
    true: int = 0  # claims that match the truth
    false: int = 0  # claims that do not
    missed: int = 0  # parts of the truth no claim matched

    def add(self, other: Count) -> None:
        self.true, self.false, self.missed = (
            self.true + other.true,
            self.false + other.false,
            self.missed + other.missed,
        )

    def __str__(self) -> str:
        return f"{self.true} / {self.false} / {self.missed}"


@dataclass
class Cell:
    counts: dict[str, Count] = field(default_factory=lambda: {kind: Count() for kind in KINDS})
    claims: list[str] = field(default_factory=list)  # each repeat's claims, in short
    series: str = ""  # the first repeat's series over the true stretches
    seconds: list[float] = field(default_factory=list)
    beside: list[float] = field(default_factory=list)  # each run's Beside.cores
    failed: list[str] = field(default_factory=list)


def matched(claimed: Sequence[int], true: Sequence[int]) -> Count:
    """Claimed changes against true ones: the closest pairs first, each used once, within TOLERANCE steps."""
    pairs = sorted((abs(c - t), i, j) for i, c in enumerate(claimed) for j, t in enumerate(true))
    used_claims: set[int] = set()
    used_truths: set[int] = set()
    for distance, i, j in pairs:
        if distance <= TOLERANCE and i not in used_claims and j not in used_truths:
            used_claims.add(i)
            used_truths.add(j)
    return Count(len(used_claims), len(claimed) - len(used_claims), len(true) - len(used_truths))


def late_ranks(stretches: Sequence[dict], truth: Truth, steps: int) -> Count:
    """The stretches' late ranks against the true stretches': each claimed one judged by the true stretch it overlaps
    most (the same rank again over one true stretch, where the analysis cut it, is neither right twice nor wrong)."""
    true = truth.stretches(steps)
    named: set[int] = set()
    false = 0
    for claimed in stretches:
        if claimed["late_rank"] is None:
            continue
        first, last = claimed["first_step"], claimed["last_step"]
        most = max(range(len(true)), key=lambda k: min(last, true[k][1]) - max(first, true[k][0]))
        if true[most][2] == claimed["late_rank"]:
            named.add(most)
        else:
            false += 1
    late = [k for k, (_, _, rank) in enumerate(true) if rank is not None]
    return Count(len(named), false, len(set(late) - named))


def score(whole_run: dict, truth: Truth) -> dict[str, Count]:
    """A report's whole-run section (report.json's `whole_run`) against a scenario's truth, per kind of claim."""
    changes = whole_run["changes"]
    return {
        "step change": matched([c["step"] for c in changes if c["kind"] == "step"], truth.steps),
        "communication change": matched([c["step"] for c in changes if c["kind"] == "communication"], truth.comm),
        "late rank": late_ranks(whole_run["stretches"], truth, whole_run["steps"]),
    }


def said(whole_run: dict) -> str:
    """What a run claimed, in short: 's40' a step change at 40, 'c60' a communication change, 'r0@40-79' rank 0 late
    over a stretch; '-' nothing."""
    changes = [("s" if c["kind"] == "step" else "c") + str(c["step"]) for c in whole_run["changes"]]
    late = [
        f"r{s['late_rank']}@{s['first_step']}-{s['last_step']}"
        for s in whole_run["stretches"]
        if s["late_rank"] is not None
    ]
    return " ".join(changes + late) or "-"


def series_over(whole_run: dict, truth: Truth) -> str:
    """The run's series between the truth's boundaries, each part's median step and communication (ms), the
    profiler's steps and the first ones left out: what the scenario planted, as the run measured it."""
    cuts = [1, *sorted({*truth.steps, *truth.comm}), whole_run["steps"] + 1]
    parts = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        points = [p for p in whole_run["series"] if a <= p["first_step"] < b and p["first_step"] not in LEFT_OUT]
        if points:
            step_ms = statistics.median(p["step_ms"] for p in points)
            comm_ms = statistics.median(p["comm_ms"] for p in points)
            parts.append(f"{a}-{b - 1}: {step_ms:.1f}/{comm_ms:.1f}")
    return ", ".join(parts)


@contextmanager
def machine(kind: str) -> Iterator[None]:
    """The machine a run runs on: as it is, or with a busy loop pinned to core 0 until the run ends."""
    if kind == "quiet":
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


class Beside:
    """The CPU that other sessions' processes use while a run runs, in cores (another job's load is a change the run
    really has, which no truth planted): /proc read every second on a thread, a process started meanwhile
    counted whole. The hog is this session's: not counted."""

    def __init__(self) -> None:
        self.session, self.tick = os.getsid(0), os.sysconf("SC_CLK_TCK")
        self.start = float(Path("/proc/uptime").read_text().split()[0]) * self.tick
        self.seen: dict[str, int] = {}
        self.ticks, self.began = 0, time.monotonic()
        self.stopped = threading.Event()
        self.sample()  # what ran before is not counted
        self.ticks = 0
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()  # after the name: state, ppid, pgrp, session...
            except OSError:
                continue
            if int(fields[3]) == self.session:
                continue
            used = int(fields[11]) + int(fields[12])  # utime + stime
            before = self.seen.get(stat.parent.name, 0 if int(fields[19]) > self.start else used)
            self.ticks += used - before
            self.seen[stat.parent.name] = used

    def watch(self) -> None:
        while not self.stopped.wait(1.0):
            self.sample()

    def cores(self) -> float:
        self.stopped.set()
        self.thread.join()
        self.sample()
        return self.ticks / self.tick / (time.monotonic() - self.began)


def launch(scenario: str, run_id: str, work: Path) -> tuple[dict | None, float, str]:
    """One run of the scenario: its report's whole-run section (None where it failed), its wall time, and why."""
    schedule = ",".join(map(str, SCHEDULE))
    argv = commprof_argv("run", "--run-id", run_id, "--quiet", "--schedule", schedule, "--", str(SCRIPT), scenario)
    start = time.monotonic()
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        return None, seconds, f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    whole = json.loads((work / "reports" / run_id / "report.json").read_text())["whole_run"]
    if whole is None or "stretches" not in whole:
        return None, seconds, "report.json has no whole_run.stretches (a commprof from before issue 62's stretches)"
    return whole, seconds, ""


def run_cell(scenario: str, kind: str, repeats: int, work: Path) -> Cell:
    cell = Cell()
    for repeat in range(1, repeats + 1):
        with machine(kind):
            beside = Beside()
            whole, seconds, failed = launch(scenario, f"{scenario}-{kind}-{repeat}", work)
            cell.beside.append(beside.cores())
        cell.seconds.append(seconds)
        if whole is None:
            cell.failed.append(failed)
            cell.claims.append("failed")
            continue
        for name, count in score(whole, TRUTHS[scenario]).items():
            cell.counts[name].add(count)
        cell.claims.append(said(whole))
        cell.series = cell.series or series_over(whole, TRUTHS[scenario])
    return cell


def truth_said(truth: Truth) -> str:
    parts = [f"s{s}" for s in truth.steps] + [f"c{c}" for c in truth.comm]
    return " ".join(parts + [f"r{rank}@{first}-{last}" for first, last, rank in truth.late]) or "-"


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="where the runs write (default: a temporary folder)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per scenario and machine (default 3)")
    parser.add_argument("--only", action="append", choices=list(TRUTHS), help="this scenario only (repeatable)")
    parser.add_argument("--quiet-only", action="store_true", help="no runs beside the CPU hog")
    given = parser.parse_args()
    work = given.workdir or Path(tempfile.mkdtemp(prefix="changes-grid-"))
    work.mkdir(parents=True, exist_ok=True)
    machines = MACHINES[:1] if given.quiet_only else MACHINES
    totals = {(name, kind): Count() for name in KINDS for kind in machines}
    bad = 0
    print(f"claims true / false / missed over {given.repeats} runs; series: median step ms / communication ms")
    print("beside: the CPU other sessions' processes used during each run (a change the run really had)")
    print()
    table_header(
        *("scenario", "machine", "truth", "step changes", "comm changes", "late ranks", "claimed", "series"),
        *("wall s", "beside, cores"),
    )
    for scenario in given.only or TRUTHS:
        for kind in machines:
            cell = run_cell(scenario, kind, given.repeats, work)
            for name, count in cell.counts.items():
                totals[name, kind].add(count)
            missed = any(c.missed for c in cell.counts.values())
            claimed_on_none = scenario == "none" and any(c.false for c in cell.counts.values())
            bad += bool(cell.failed) or missed or claimed_on_none
            table_row(
                scenario,
                kind,
                truth_said(TRUTHS[scenario]),
                *(cell.counts[name] for name in KINDS),
                " ; ".join(cell.claims),
                cell.series or "; ".join(cell.failed),
                f"{statistics.fmean(cell.seconds):.1f}",
                " ".join(f"{cores:.2f}" for cores in cell.beside),
            )
    print()
    table_header("claim", "machine", "true", "false", "missed", "precision", "recall")
    for (name, kind), count in totals.items():
        claimed, true = count.true + count.false, count.true + count.missed
        table_row(
            name, kind, count.true, count.false, count.missed, ratio(count.true, claimed), ratio(count.true, true)
        )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
