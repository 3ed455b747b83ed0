"""The straggler's control grid (issue 52, item 3): a rank slowed by 30 ms a step {before its batch, in its forward,
in its backward, in its optimizer step} x {one DDP bucket, two (the backward's sleep then falls between them)} x {rank
0, rank 1}, each a real run of tests/data/scripts/slowed_phase.py on 2 CPU ranks over Gloo; each must name the slowed
rank the straggler, its gain about the 30 ms with an interval above 0, and point at the part of the step that grew.

    python benchmarks/check/straggler_grid.py [--workdir DIR]

Prints a Markdown table (docs/semantics.md, "The straggler's control grid") and exits 1 when a cell misses."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA, commprof_argv, table_header, table_row  # noqa: E402

SCRIPT = TESTS_DATA / "scripts" / "slowed_phase.py"
PARTS = {  # where the time went -> the parts of the straggler's advice that are right for it
    "input": ("idle before its first operator",),
    "forward": ("time in its forward outside any operator",),
    "backward": ("compute", "time in its backward outside any operator"),  # a gradient hook runs inside autograd
    "optimizer": ("time in its optimizer step outside any operator",),
}


def run_cell(where: str, width: int | None, rank: int, work: Path) -> tuple[bool, str]:
    run_id = f"{where}-{width or 'one'}-{rank}"
    args = ["run", "--run-id", run_id, "--max-steps", "24", "--schedule", "3,1,6", "--quiet", "--"]
    args += [str(SCRIPT), where, str(rank), *([str(width)] if width else [])]
    done = subprocess.run(commprof_argv(*args), cwd=work, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return False, f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"
    report = json.loads((work / "reports" / run_id / "report.json").read_text())
    straggler = next((f for f in report["findings"] if f["kind"] == "straggler"), None)
    stalls = [f for f in report["findings"] if f["kind"] == "input_stall"]
    if straggler is None:
        noise = next((f for f in report["within_noise"] if f["kind"] == "straggler"), None)
        return False, "no straggler" + (f" (within the noise: {noise['gain_ms']})" if noise else "")
    gain = straggler["gain_ms"]
    said = f"rank {rank}" in straggler["title"] and 20 <= gain["value"] <= 45 and gain["low"] > 0
    part = any(straggler["action"].startswith(f"look at rank {rank}'s {p}") for p in PARTS[where])
    stall_ok = bool(stalls) == (where == "input")
    outcome = f"{gain['value']:.1f} ms ({gain['low']:.1f}-{gain['high']:.1f}); {straggler['action'][:70]}..."
    if not stall_ok:
        outcome += " input stall " + ("missing" if where == "input" else "claimed")
    return said and part and stall_ok, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="where the runs write (default: a temporary folder)")
    work = parser.parse_args().workdir or Path(tempfile.mkdtemp(prefix="straggler-grid-"))
    work.mkdir(parents=True, exist_ok=True)
    table_header("slowed in", "buckets", "rank", "named", "gain, advice")
    missed = 0
    for where in PARTS:
        for width in (None, 1100):
            for rank in (0, 1):
                ok, outcome = run_cell(where, width, rank, work)
                missed += not ok
                table_row(where, "two" if width else "one", rank, "yes" if ok else "NO", outcome)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
