"""Record the runs the tests replay in-process (tests/data/<name>/): each scenario launched once under `commprof run`
as a user would, its folder kept small (run.json, each rank's trace gzipped, its whole-run record and its record of
each collective's process group), its README kept as written.

    python benchmarks/generate/record_runs.py [NAME ...]     # all of them without a name

A scenario's facts are asserted by its tests (tests/test_groups.py, tests/test_grid_runs.py); re-recording one
changes its numbers, not the truths the tests check."""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import REPO, TESTS_DATA, commprof  # noqa: E402

SCRIPTS = TESTS_DATA / "scripts"


@dataclass(frozen=True)
class Scenario:
    name: str  # its folder under tests/data
    args: tuple[str, ...]  # of `commprof run`


SCENARIOS = (
    Scenario(
        "fsdp-tp",
        ("--procs", "4", "--max-steps", "10", "--schedule", "3,1,3", "--", str(SCRIPTS / "train_fsdp_tp.py"), "10"),
    ),
    Scenario(
        "pipeline-dp",
        ("--procs", "4", "--schedule", "3,1,3", "--", str(SCRIPTS / "train_pipeline_dp.py"), "14"),
    ),
    Scenario(
        "subgroups-late",
        ("--procs", "4", "--schedule", "3,1,3", "--", str(SCRIPTS / "train_ddp_subgroups.py"), "24", "3"),
    ),
    # the straggler grid's cases (benchmarks/check/straggler_grid.py runs them as a grid, launch after launch)
    Scenario(
        "slow-backward", ("--max-steps", "24", "--schedule", "3,1,6", "--", str(SCRIPTS / "slow_backward_on_rank0.py"))
    ),
    Scenario(
        "slow-backward-two-buckets",
        ("--max-steps", "24", "--schedule", "3,1,6", "--", str(SCRIPTS / "slow_backward_on_rank0.py"), "1100"),
    ),
    Scenario(
        "identical-ranks",
        ("--max-steps", "24", "--schedule", "3,1,6", "--", str(SCRIPTS / "slowed_phase.py"), "none", "0", "1100"),
    ),
    Scenario("shares-a-core", ("--max-steps", "40", "--schedule", "3,1,6", "--", str(SCRIPTS / "shares_a_core.py"))),
    Scenario(
        "shares-a-core-sleeps",
        ("--max-steps", "40", "--schedule", "3,1,6", "--", str(SCRIPTS / "shares_a_core.py"), "sleep"),
    ),
    Scenario("slow-input", ("--max-steps", "12", "--schedule", "3,1,6", "--", str(SCRIPTS / "slow_input_on_rank1.py"))),
    Scenario(
        "slow-optimizer-step",
        ("--max-steps", "12", "--schedule", "3,1,6", "--", str(SCRIPTS / "slow_optimizer_step_on_rank1.py")),
    ),
    Scenario("now-and-then", ("--schedule", "10,1,7", "--", str(SCRIPTS / "slow_every_10th_step_on_rank1.py"))),
    # the changes grid's sample (benchmarks/check/changes_grid.py runs the whole grid, launch after launch)
    Scenario("stretch-late-rank", ("--schedule", "100,2,5", "--", str(SCRIPTS / "stretches.py"), "stretch")),
    Scenario("comm-change", ("--schedule", "100,2,5", "--", str(SCRIPTS / "stretches.py"), "comm")),
    # commprof's own model, every step profiled: DDP's own timers against the trace (tests/test_sweep_e2e.py)
    Scenario("ddp-every-step", ("--steps", "24", "--schedule", "0,0,24", "--batch-size", "8")),
    Scenario("join-uneven", ("--schedule", "3,1,6", "--", str(SCRIPTS / "join_uneven.py"))),
    Scenario(
        "tiny-cap",
        (
            "--model",
            f"{TESTS_DATA / 'deep_mlp.py'}:build",
            "--bucket-cap-mb",
            "0.001",
            "--steps",
            "16",
            "--schedule",
            "3,1,3",
        ),
    ),
)
KEPT = ("run.json", "rank*.ledger.json", "rank*.groups.json")


def record(scenario: Scenario, workdir: Path) -> Path:
    """Launch the scenario in `workdir`; its run folder."""
    commprof("run", "--quiet", "--run-id", scenario.name, *scenario.args, cwd=workdir, code=REPO)
    return workdir / "traces" / scenario.name


def keep(run_dir: Path, target: Path) -> None:
    """The run folder's small part into `target`, its README left as it is."""
    target.mkdir(parents=True, exist_ok=True)
    for old in target.iterdir():
        if old.name != "README.md":
            old.unlink()
    for pattern in KEPT:
        for path in run_dir.glob(pattern):
            shutil.copy(path, target / path.name)
    for trace in run_dir.glob("rank*.pt.trace.json"):
        with trace.open("rb") as raw, gzip.open(target / f"{trace.name}.gz", "wb", compresslevel=9) as packed:
            shutil.copyfileobj(raw, packed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"of {', '.join(s.name for s in SCENARIOS)}; all when none")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.names or s.name in args.names]
    unknown = set(args.names) - {s.name for s in SCENARIOS}
    if unknown:
        sys.exit(f"no scenario named {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="record-runs-") as tmp:
        for scenario in chosen:
            print(f"recording {scenario.name} ...", flush=True)
            keep(record(scenario, Path(tmp)), TESTS_DATA / scenario.name)
            size = sum(p.stat().st_size for p in (TESTS_DATA / scenario.name).iterdir())
            print(f"  tests/data/{scenario.name}: {size / 1024:.0f} KiB", flush=True)


if __name__ == "__main__":
    main()
