"""A long run stays small and does not slow down (issue 31): `commprof run` of a script with ~1 ms steps for
100,000 steps, then what it left on disk per rank and its step time at the start against the end.

    python benchmarks/check/bench_long_run.py --workdir /tmp/bench-long [--steps 100000]

Prints, per rank: the whole-run record's size, the step log's and the step lines' sizes, and from the record's
blocks the mean step over the first and the last tenth of the run (a record or a log whose upkeep grew with the
run would show as a later step slower than an early one); then run.json's size, its steps completed and the whole
run folder's size. Exits 1 when the record exceeds its bound (results/step_ledger.UPPER_BYTES), the last tenth's
mean step is more than 10% above the first's, the step lines hold more than the steps kept (runlog.steps_kept), or
run.json does not count every step."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import WORKLOADS, commprof  # noqa: E402
from commprof.config import ProfileSchedule  # noqa: E402
from commprof.launch.runlog import read_run_json  # noqa: E402
from commprof.launch.step_log import steps_kept  # noqa: E402
from commprof.results.step_ledger import UPPER_BYTES, read_ledgers  # noqa: E402

SCRIPT = WORKLOADS / "tiny_steps.py"


def mean_step(blocks) -> float:
    return sum(b.step_ms_sum for b in blocks) / sum(b.steps for b in blocks)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    run = ["run", "--quiet", "--run-id", "long", "--", str(SCRIPT), "--steps", str(args.steps)]
    commprof(*run, cwd=args.workdir, capture=False)
    print(f"{args.steps} steps in {time.perf_counter() - started:.0f} s (analysis included)")
    run_dir = args.workdir / "traces" / "long"
    ok = True
    for rank, ledger in sorted(read_ledgers(run_dir).items()):
        size = (run_dir / f"rank{rank}.ledger.json").stat().st_size
        log = (run_dir / f"rank{rank}.steps.json").stat().st_size
        lines = (run_dir / f"rank{rank}.steps.txt").stat().st_size
        tenth = max(1, len(ledger.blocks) // 10)
        first = sum(b.step_ms_sum for b in ledger.blocks[1 : tenth + 1]) / sum(
            b.steps for b in ledger.blocks[1 : tenth + 1]
        )
        last = sum(b.step_ms_sum for b in ledger.blocks[-tenth:]) / sum(b.steps for b in ledger.blocks[-tenth:])
        print(
            f"rank {rank}: {ledger.steps} steps recorded in {len(ledger.blocks)} blocks of {ledger.block_steps}; "
            f"record {size / 1024:.0f} KiB, step log {log / 1024:.0f} KiB, step lines {lines / 1024:.0f} KiB; "
            f"mean step {first:.3f} ms in the first tenth (after the first block), {last:.3f} ms in the last"
        )
        kept = len((run_dir / f"rank{rank}.steps.txt").read_text().splitlines())
        ok = ok and size < UPPER_BYTES and last <= 1.1 * first and kept <= steps_kept(ProfileSchedule())
    record = read_run_json(run_dir)
    completed = record.steps_completed if record else None
    folder = sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file())
    print(
        f"run.json {(run_dir / 'run.json').stat().st_size / 1024:.0f} KiB, {completed} steps completed; "
        f"the run folder {folder / 2**20:.1f} MiB"
    )
    return 0 if ok and completed == args.steps else 1


if __name__ == "__main__":
    raise SystemExit(main())
