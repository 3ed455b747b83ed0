"""Tune's control grid (issue 60, item 5): {a model where the cap matters (48 small layers at bucket_cap_mb 0.02),
one where it does not (a small CNN at 0.05), the CNN at DDP's default} x {a quiet machine, a CPU hog on one core}
x 3 runs of `commprof tune --max-steps 12 -- benchmarks/workloads/cap_models.py ...`. Each cell must give the same
answer in its three runs (the same cap, or keep); every setting tune recommends is then timed under plain torchrun
against the script as written, in 5 interleaved pairs of launches (the order alternating), in the cell's own
condition: none may be slower than the script's own beyond the noise, and where the cap matters it must be faster.

    python benchmarks/check/tune_launch_grid.py [--workdir DIR] [--runs 3] [--pairs 5] [--only CASE ...]

Prints Markdown tables (docs/benchmarks.md, "Tune from one launch to the next") and exits 1 when a cell misses."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import WORKLOADS, commprof_argv, table_header, table_row  # noqa: E402

SCRIPT = WORKLOADS / "cap_models.py"
CASES = {  # name -> the script's own arguments, and whether its cap matters (a positive control)
    "many small layers, cap 0.02": (("--model", "many-small", "--bucket-cap-mb", "0.02"), True),
    "CNN, cap 0.05": (("--model", "cnn", "--bucket-cap-mb", "0.05"), False),
    "CNN, DDP's default": (("--model", "cnn"), False),
}
CONDITIONS = ("quiet", "hog on core 1")
TORCHRUN_STEPS, TORCHRUN_WARMUP = 20, 3


@contextlib.contextmanager
def condition(name: str) -> Iterator[None]:
    """A quiet machine, or one whose core 1 a busy loop holds for as long as the cell runs."""
    if name == "quiet":
        yield
        return
    hog = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        hog.kill()
        hog.wait()


def tune(run_id: str, args: tuple[str, ...], work: Path, resume: bool = False) -> tuple[str, dict]:
    """One tune (with `resume`, the one already in `work` where it finished); its answer (the cap it recommends, or
    'keep') and its report's sweep."""
    report = work / "reports" / run_id / "report.json"
    if not (resume and report.exists()):
        argv = commprof_argv("tune", "--run-id", run_id, "--quiet", "--max-steps", "12", "--", str(SCRIPT), *args)
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=3600)
        if done.returncode:
            return f"failed: {done.stderr.strip().splitlines()[-1:]}", {}
    sweep = json.loads(report.read_text())["sweep"]
    if not sweep["paste"]:
        return "keep", sweep
    best = next(s for s in sweep["settings"] if s["label"] == sweep["best"])
    return f"bucket_cap_mb={best['options']['bucket_cap_mb']:g}", sweep


RETRIED: list[str] = []  # the torchrun launches that failed and were launched again, with why


def torchrun_step(args: list[str], work: Path) -> float:
    """The median step (ms) of one plain torchrun launch of the script, after its warm-up steps. A launch that fails
    (a rank of torchrun's own job was seen to abort, SIGABRT, under the busy loop: once in the first grid) is launched
    again, once, and listed in RETRIED."""
    out = work / "steps.json"
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(SCRIPT), *args]
    argv += ["--steps", str(TORCHRUN_STEPS), "--out", str(out)]
    for attempt in range(2):
        out.unlink(missing_ok=True)
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            return statistics.median(json.loads(out.read_text())[TORCHRUN_WARMUP:])
        why = next((line for line in done.stderr.splitlines() if "exitcode" in line), "exit status")
        RETRIED.append(f"torchrun {' '.join(args)}: {why.strip()}")
        if attempt:
            raise SystemExit(f"torchrun {' '.join(args)} failed twice: {done.stderr.strip()[-2000:]}")
    raise AssertionError("unreachable")


def under_torchrun(own: tuple[str, ...], cap: float, pairs: int, work: Path) -> tuple[list[float], list[float]]:
    """The script as written and with the recommended cap, interleaved pairs of plain torchrun launches."""
    base, recommended = [], []
    for pair in range(pairs):
        changed = [*_without_cap(own), "--bucket-cap-mb", f"{cap:g}"]
        order = [(base, list(own)), (recommended, changed)]
        for into, args in order if pair % 2 == 0 else reversed(order):
            into.append(torchrun_step(args, work))
    return base, recommended


def _without_cap(args: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--bucket-cap-mb":
            skip = True
        else:
            out.append(arg)
    return out


def paired(base: list[float], other: list[float]) -> tuple[float, float, float]:
    """base / other over the pairs (> 1: other is faster): geometric mean and Student's t interval."""
    from commprof.analysis.launch_stats import paired_speedup

    keys = [str(i) for i in range(len(base))]
    got = paired_speedup(dict(zip(keys, base, strict=True)), dict(zip(keys, other, strict=True)))
    return got.value, got.low, got.high


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--only", choices=list(CASES), action="append", help="a case to run (again: more cases)")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    parser.add_argument("--resume", action="store_true", help="take the tunes already finished in --workdir")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="tune-grid-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # as torchrun and commprof set it for ranks sharing a node
    misses = 0
    table_header("case", "condition", "tune's answers", "same", "launches", "checked under torchrun", "verdict")
    for index, (case, (own, matters)) in enumerate(CASES.items()):
        if args.only and case not in args.only:
            continue
        for where in args.conditions.split(","):
            with condition(where):
                answers, launches = [], []
                for run in range(args.runs):
                    slug = f"case{index + 1}-{where.split()[0]}-{run + 1}"
                    answer, sweep = tune(slug, own, work, args.resume)
                    answers.append(answer)
                    launches.append(int(sweep.get("timings", {}).get("launches", 0)))
                checks, ok = [], len(set(answers)) == 1 and not any(a.startswith("failed") for a in answers)
                for answer in sorted(set(answers)):
                    if not answer.startswith("bucket_cap_mb="):
                        continue
                    base, recommended = under_torchrun(own, float(answer.split("=")[1]), args.pairs, work)
                    value, low, high = paired(base, recommended)
                    slower = high < 1
                    ok &= not slower and (not matters or low > 1)
                    checks.append(
                        f"{answer}: {statistics.fmean(recommended):.1f} vs {statistics.fmean(base):.1f} ms, "
                        f"{value:.2f}x ({low:.2f}-{high:.2f})" + (" SLOWER" if slower else "")
                    )
                if matters and answers.count("keep"):
                    ok = False  # the positive control: its cap costs calls, and tune must find it every time
                misses += not ok
                table_row(
                    case,
                    where,
                    ", ".join(answers),
                    "yes" if len(set(answers)) == 1 else "no",
                    ", ".join(map(str, launches)),
                    "; ".join(checks) or "-",
                    "ok" if ok else "MISS",
                )
    for retried in RETRIED:
        print(f"\nlaunched again: {retried}")
    print(f"\n{misses} cell(s) missed; work in {work}")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
