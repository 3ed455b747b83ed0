"""DeepSpeed's bucket finding against what `commprof advise` measures (issue 53; moved out of the suite by issue 71,
a positive control on live launches): tests/data/scripts/train_deepspeed.py gives DeepSpeed a JSON file with
2000-element buckets, a gradient reduction per parameter. Each of REPEATS launches must find reduce_bucket_size 5e5
(one bucket) with a gain whose interval is above 0, and `commprof advise` must set it in the same file's config
against the script's own and measure it faster beyond the noise. Needs DeepSpeed (pip install 'commprof[deepspeed]').

    python benchmarks/check/deepspeed_advise.py [--workdir DIR] [--repeats 1]

Prints a Markdown table and exits 1 when a launch misses."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA, commprof, table_header, table_row  # noqa: E402
from commprof.results.store import load_report  # noqa: E402

SCRIPT = TESTS_DATA / "scripts" / "train_deepspeed.py"
ROUNDS = ("--repeats", "3", "--max-steps", "8", "--warmup-steps", "3", "--profile-steps", "2")


def one_launch(workdir: Path, name: str) -> tuple[str, list[str]]:
    """One run and its advise: what was found and measured, and what the control misses."""
    config = workdir / f"{name}.json"
    zero = {"stage": 2, "reduce_bucket_size": 2e3, "allgather_bucket_size": 5e5, "overlap_comm": True}
    config.write_text(json.dumps({"train_micro_batch_size_per_gpu": 16, "zero_optimization": zero}))
    script = ["--", str(SCRIPT), "--deepspeed_config", str(config)]
    commprof("run", "--run-id", name, "--max-steps", "16", "--schedule", "4,1,8", "--quiet", *script, cwd=workdir)
    report = load_report(workdir / "reports" / name / "report.json")
    found = [f for f in report.findings if f.kind == "zero_buckets"]
    misses = []
    if not (
        found and found[0].setting == {"reduce_bucket_size": 5e5} and found[0].gain_ms and found[0].gain_ms.low > 0
    ):
        misses.append("no reduce_bucket_size 5e5 found beyond the noise")
    commprof("advise", name, *ROUNDS, "--quiet", cwd=workdir)
    checked = load_report(workdir / "reports" / f"{name}-advise" / "report.json")
    advised = [s for s in (checked.sweep.settings if checked.sweep else []) if s.label == "reduce-5e5"]
    if not (checked.sweep and checked.sweep.best == "reduce-5e5" and advised and advised[0].significant):
        misses.append("advise did not measure reduce-5e5 faster")
    said = f"{found[0].gain_ms.value:.1f} ms predicted" if found and found[0].gain_ms else "nothing found"
    if advised and advised[0].speedup:
        said += f"; advise {advised[0].speedup.value:.2f}x ({advised[0].speedup.low:.2f}-{advised[0].speedup.high:.2f})"
    return said, misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="commprof-deepspeed-advise-"))
    workdir.mkdir(parents=True, exist_ok=True)
    table_header("launch", "found, measured", "misses")
    failed = False
    for i in range(args.repeats):
        said, misses = one_launch(workdir, f"small{i}")
        failed = failed or bool(misses)
        table_row(i, said, "; ".join(misses) or "-")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
