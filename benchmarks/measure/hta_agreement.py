"""commprof against HTA 0.5.0's recorded numbers on the NCCL test traces (the tables in docs/semantics.md).

    python benchmarks/measure/hta_agreement.py

For each rank: `--windows hta` (analysis.whole_trace) minus HTA, and the default per-step report summed over the
steps HTA keeps (all but the last) minus HTA, in percentage points of idle / compute / non-compute / overlap; and
the device operations whose launch is not in the trace (HTA drops them, commprof counts them)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA  # noqa: E402
from commprof.analysis.breakdown import breakdown_step, step_windows  # noqa: E402
from commprof.analysis.whole_trace import whole_trace  # noqa: E402
from commprof.trace import rules  # noqa: E402
from commprof.trace.intervals import merge, total  # noqa: E402
from commprof.trace.load import load_run  # noqa: E402

FIGURES = ("idle_pct", "compute_pct", "non_compute_pct", "overlap_pct")


def per_step_shares(rank) -> dict[str, float | None]:
    steps = [breakdown_step(rank, w) for w in step_windows(rank)]
    kept = steps[:-1] if len(steps) > 1 else steps
    window, compute, idle = (sum(getattr(s, a) for s in kept) for a in ("window_ms", "compute_ms", "idle_ms"))
    comm, overlap = sum(s.comm_ms for s in kept), sum(s.overlap_ms for s in kept)
    return {
        "idle_pct": 100 * idle / window,
        "compute_pct": 100 * compute / window,
        "non_compute_pct": 100 * (window - compute - idle) / window,
        "overlap_pct": 100 * overlap / comm if comm else None,
    }


def without_launch(path: Path) -> tuple[int, float]:
    """Device operations whose correlation matches no launch in the trace, and their busy time (ms)."""
    with gzip.open(path) if path.suffix == ".gz" else open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    launched = {e["args"].get("correlation") for e in events if e.get("cat") in rules.RUNTIME_CATS and e.get("args")}
    device = [
        e
        for e in events
        if e.get("cat") in rules.KERNEL_CATS | rules.MEMORY_CATS
        and (e.get("args") or {}).get("correlation") not in launched
    ]
    return len(device), total(merge((e["ts"], e["ts"] + e["dur"]) for e in device)) / 1000


def differences(ours: dict, hta: dict) -> str:
    return " / ".join("-" if hta[k] is None or ours[k] is None else f"{ours[k] - hta[k]:+.3f}" for k in FIGURES)


def main() -> None:
    reference = json.loads((TESTS_DATA / "hta_reference.json").read_text())["traces"]
    print("| trace | rank | `--windows hta` − HTA (pp) | per-step report − HTA (pp) | device ops without launch |")
    print("|---|---|---|---|---|")
    for folder, ranks in reference.items():
        for rank in load_run([TESTS_DATA / "traces" / folder], workers=1).ranks:
            hta = ranks[str(rank.rank)]
            whole = whole_trace(rank)
            count, busy_ms = without_launch(Path(rank.path))
            print(
                f"| {folder} | {rank.rank} | {differences({k: getattr(whole, k) for k in FIGURES}, hta)} | "
                f"{differences(per_step_shares(rank), hta)} | {count} ({busy_ms:.1f} ms) |"
            )


if __name__ == "__main__":
    main()
