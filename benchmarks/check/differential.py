"""The differential check: a job under commprof ends as it would under torchrun.

Each script of the corpus (tests/data/scripts/endings.py's endings, the suite's fault scripts, public-style trainers)
runs on 2 CPU ranks under plain torchrun and under `commprof run --`, each launcher observed by
benchmarks/check/observed.py. Per rank: its exit status (0, `exit N`, the signal that ended it), the script's own
output lines (its stdout) and the steps it printed (`rank R step N` lines, where the script prints them). They must be
equal, or differ only within the row's documented bound (a --timeout given to commprof and exceeded by a collective of
the script: commprof stops the job sooner, so the ranks end by the stop). Prints the Markdown table of
docs/reliability.md ("A job ends as under torchrun") and exits 1 on an unexplained difference.

    python benchmarks/check/differential.py [--workdir DIR] [--only NAME ...]

A new edge case starts as a row here."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import REPO, TESTS_DATA, table_header, table_row  # noqa: E402

SCRIPTS = TESTS_DATA / "scripts"
OBSERVED = REPO / "benchmarks" / "check" / "observed.py"
RANKS = 2
_STEP_LINE = re.compile(r"^rank (\d+) step (\d+)$")
# what torch's agent and the Python runtime add to a rank's stdout under either launcher, not the script's own
_NOT_THE_SCRIPTS = re.compile(r"^USDT:|^\s*$")
_PEER_GONE = re.compile(r"Connection (closed|reset) by peer")


@dataclass(frozen=True)
class Case:
    name: str
    script: tuple[str, ...]  # the script and its arguments
    ending: str  # how it ends, in words
    commprof_options: tuple[str, ...] = ()  # given to `commprof run` before `--`
    bound: str = ""  # the documented bound within which the two may differ; "": none
    env: dict[str, str] = field(default_factory=dict)
    ranks: int = RANKS


def corpus() -> list[Case]:
    endings = str(SCRIPTS / "endings.py")
    return [
        Case("success", (endings, "success"), "every rank returns after destroy_process_group"),
        Case("no-destroy", (endings, "no-destroy"), "every rank returns without destroy_process_group"),
        Case(
            "final-save",
            (endings, "final-save", "--save", "12"),
            "rank 0 saves for 12 s after the last step, then every rank destroys its group",
            ("--timeout", "5"),
        ),
        Case(
            "final-save-no-destroy",
            (endings, "final-save-no-destroy", "--save", "12"),
            "the same, no destroy_process_group",
            ("--timeout", "5"),
        ),
        Case("uneven", (endings, "uneven", "--at", "25"), "rank 1 has 25 batches, rank 0 has 40"),
        Case("raise", (endings, "raise"), "rank 1 raises at step 6"),
        Case("exit3", (endings, "exit3"), "rank 1 calls sys.exit(3) at step 6"),
        Case("exit0", (endings, "exit0"), "every rank calls sys.exit(0) after its last step"),
        Case("kill", (endings, "kill"), "rank 1 kills itself (SIGKILL) at step 6"),
        Case(
            "hang, its own timeout",
            (endings, "hang", "--timeout", "10"),
            "rank 1 sleeps forever at step 6; the script's process group has a 10 s timeout",
        ),
        Case(
            "hang, --timeout shorter",
            (endings, "hang", "--timeout", "60"),
            "the same with a 60 s timeout of the script's",
            ("--timeout", "5"),
            bound="--timeout 5 exceeded by the script's collective: commprof stops the job after 5 s + 15 s of "
            "grace, before the script's 60 s; its ranks end by that stop (SIGTERM)",
        ),
        Case("fails on rank 1", (str(SCRIPTS / "fails_on_rank1.py"),), "tests/data: rank 1 raises at its third step"),
        Case("never steps", (str(SCRIPTS / "never_steps.py"),), "tests/data: DDP forward and backward, no optimizer"),
        Case("not distributed", (str(SCRIPTS / "not_distributed.py"),), "tests/data: trains alone, no process group"),
        Case("tutorial-style", (str(SCRIPTS / "train_epochs.py"),), "tests/data: DataLoader, epochs, a checkpoint"),
        Case("lightning", (str(SCRIPTS / "train_lightning.py"),), "tests/data: Lightning builds the DDP"),
        Case(
            "gan",
            (str(SCRIPTS / "train_gan.py"),),
            "tests/data: two DDP models, each with its own optimizer (issue 63)",
        ),
        Case("fsdp2", (str(SCRIPTS / "train_fsdp.py"),), "tests/data: the script's own fully_shard (issue 63)"),
        Case("two fsdp", (str(SCRIPTS / "train_fsdp_two.py"),), "tests/data: two models sharded (issue 63)"),
        Case(
            "meta to_empty",
            (str(SCRIPTS / "meta_to_empty.py"),),
            "tests/data: built on meta, to_empty under the swap flag, then DDP (issue 70)",
        ),
        Case(
            "fsdp x tp",
            (str(SCRIPTS / "train_fsdp_tp.py"),),
            "tests/data: a 2-D mesh, fully_shard over dp and parallelize_module over tp (dp=1 x tp=2; issue 70)",
        ),
        Case(
            "meta fsdp2",
            (str(SCRIPTS / "meta_fsdp.py"),),
            "tests/data: fully_shard on meta, then to_empty under the swap flag (issue 70)",
        ),
        Case(
            "fsdp x tp 2x2",
            (str(SCRIPTS / "train_fsdp_tp.py"),),
            "tests/data: dp=2 x tp=2 on 4 ranks (issue 70's grid)",
            ranks=4,
        ),
        Case("hsdp", (str(SCRIPTS / "train_hsdp.py"),), "tests/data: HSDP on a 2 x 2 mesh (issue 70's grid)", ranks=4),
        Case(
            "ddp subgroups",
            (str(SCRIPTS / "train_ddp_subgroups.py"),),
            "tests/data: two DDP replicas over {0, 1} and {2, 3} (issue 70's grid)",
            ranks=4,
        ),
        Case(
            "late in one group",
            (str(SCRIPTS / "train_ddp_subgroups.py"), "30", "3"),
            "tests/data: the replicas, rank 3 30 ms late each step (issue 70's grid)",
            ranks=4,
        ),
        Case(
            "pipeline x dp",
            (str(SCRIPTS / "train_pipeline_dp.py"),),
            "tests/data: 2-stage GPipe over pp x 2-way dp (issue 70's grid)",
            ranks=4,
        ),
    ]


@dataclass(frozen=True)
class RankEnd:
    status: str  # "0", "exit N", or the signal's name
    steps: int | None  # the last `rank R step N` it printed; None where it prints none
    lines: tuple[str, ...]  # its stdout
    peer_gone: bool = False  # its error says a peer's end ended it (a closed connection)

    @property
    def kind(self) -> str:
        """The class compared: a rank that ended because a peer did (stopped by its launcher, or its collective
        failing on the peer's closed connection first: which comes first is a race under either launcher) is one
        class; any other status is its own."""
        return "ended by a peer's end" if self.status == "SIGTERM" or self.peer_gone else self.status


@dataclass(frozen=True)
class Ending:
    exit_code: int
    seconds: float
    ranks: dict[int, RankEnd]


def status_text(code: int | None) -> str:
    if code is None:
        return "?"
    if code < 0:
        return signal.Signals(-code).name if -code in set(signal.Signals) else f"signal {-code}"
    return "0" if code == 0 else f"exit {code}"


def rank_end(code: int | None, stdout: str, stderr: str = "") -> RankEnd:
    lines = tuple(line for line in stdout.splitlines() if not _NOT_THE_SCRIPTS.search(line))
    steps = [int(m.group(2)) for line in lines if (m := _STEP_LINE.match(line))]
    peer_gone = code == 1 and bool(_PEER_GONE.search(stderr))
    return RankEnd(status_text(code), max(steps) if steps else None, lines, peer_gone)


def launch(case: Case, launcher: str, workdir: Path) -> Ending:
    """The case under `launcher` (torchrun, commprof), in a folder of its own."""
    folder = Path(tempfile.mkdtemp(prefix=f"{launcher}-", dir=workdir))
    out = folder / "observed.json"
    if launcher == "torchrun":
        args = ["--standalone", f"--nproc-per-node={case.ranks}", "--log-dir", str(folder / "logs"), "--redirects", "3"]
        args += [*case.script]
    else:
        run = ["run", "--quiet", "--procs", str(case.ranks), "--traces-dir", str(folder / "traces")]
        args = [
            *run,
            "--reports-dir",
            str(folder / "reports"),
            "--run-id",
            "job",
            *case.commprof_options,
            "--",
            *case.script,
        ]
    env = {**os.environ, "COMMPROF_CHECK": "1", **case.env}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(OBSERVED), launcher, str(out), *args], cwd=folder, env=env, capture_output=True, text=True
    )
    seconds = time.monotonic() - started
    observed = json.loads(out.read_text()) if out.exists() else {"exit": done.returncode, "ranks": {}}
    codes = {int(rank): code for rank, code in observed["ranks"].items()}
    ranks = {
        rank: rank_end(codes.get(rank), _log(folder, rank, "stdout.log"), _errors(folder, rank))
        for rank in range(case.ranks)
    }
    return Ending(observed["exit"], seconds, ranks)


def _log(folder: Path, rank: int, name: str) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.glob(f"**/attempt_0/{rank}/{name}"))


def _errors(folder: Path, rank: int) -> str:
    """What the rank said of its error: its stderr (torchrun's rank prints its traceback there) and its error file
    (commprof's rank records it there)."""
    return _log(folder, rank, "stderr.log") + _log(folder, rank, "error.json")


def differences(plain: Ending, profiled: Ending) -> list[str]:
    """What differs, rank by rank: its status, its steps, its output lines; and the launcher's exit code."""
    found = []
    if (plain.exit_code == 0) != (profiled.exit_code == 0):
        found.append(f"the launcher's exit code: {plain.exit_code} under torchrun, {profiled.exit_code} under commprof")
    for rank, ended in plain.ranks.items():
        other = profiled.ranks[rank]
        if ended.kind != other.kind:
            found.append(f"rank {rank}'s end: {ended.kind} against {other.kind}")
        if ended.steps != other.steps:
            found.append(f"rank {rank}'s steps: {ended.steps} against {other.steps}")
        elif ended.lines != other.lines:
            found.append(f"rank {rank}'s output: {len(ended.lines)} lines against {len(other.lines)}")
    return found


def ranks_text(ending: Ending) -> str:
    return "; ".join(
        f"{rank}: {e.status}{' (peer gone)' if e.peer_gone else ''}"
        + (f", {e.steps} steps" if e.steps is not None else "")
        for rank, e in ending.ranks.items()
    )


@dataclass(frozen=True)
class Compared:
    case: Case
    plain: Ending
    profiled: Ending
    found: list[str]  # what differs

    @property
    def explained(self) -> bool:
        return not self.found or bool(self.case.bound)

    @property
    def verdict(self) -> str:
        if not self.found:
            return "same"
        said = "; ".join(self.found)
        return f"within its bound: {self.case.bound} ({said})" if self.case.bound else f"DIFFERS ({said})"


# Launches of the reference a rank of which torch aborted at its exit: Gloo's worker thread destroys a finished
# AsyncWork whose ThreadLocalState holds a Python object while the interpreter finalizes; take_gil then exits the
# thread, and the forced unwind through a noexcept destructor ends in std::terminate (a core of plain torchrun's,
# 2026-12-05, docs/reliability.md). Such a launch says nothing of how the script ends: the reference is launched again.
REFERENCE_TRIES = 3


def compare(case: Case, workdir: Path) -> Compared:
    plain = launch(case, "torchrun", workdir)
    for _ in range(REFERENCE_TRIES - 1):
        if not any(end.status == "SIGABRT" for end in plain.ranks.values()):
            break
        plain = launch(case, "torchrun", workdir)
    profiled = launch(case, "commprof", workdir)  # never launched again: an abort of its own is a difference
    return Compared(case, plain, profiled, differences(plain, profiled))


def print_row(compared: Compared) -> None:
    case, plain, profiled = compared.case, compared.plain, compared.profiled
    options = f" (commprof {' '.join(case.commprof_options)})" if case.commprof_options else ""
    table_row(
        case.name,
        case.ending + options,
        f"{ranks_text(plain)} (exit {plain.exit_code}, {plain.seconds:.0f} s)",
        f"{ranks_text(profiled)} (exit {profiled.exit_code}, {profiled.seconds:.0f} s)",
        compared.verdict,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=None, help="the cases to run, by name")
    args = parser.parse_args()
    cases = [c for c in corpus() if args.only is None or c.name in args.only]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="commprof-differential-"))
    workdir.mkdir(parents=True, exist_ok=True)
    table_header("case", "how it ends", "torchrun", "commprof run", "verdict")
    compared = []
    for case in cases:
        compared.append(compare(case, workdir))
        print_row(compared[-1])
    sys.exit(0 if all(c.explained for c in compared) else 1)


if __name__ == "__main__":
    main()
