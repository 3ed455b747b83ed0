"""Record Holistic Trace Analysis's figures for the shared GPU traces (tests/data/hta_reference.json).

    pip install HolisticTraceAnalysis==0.5.0
    python benchmarks/generate/hta_reference.py ../shared/traces > tests/data/hta_reference.json

HTA is not a dependency of commprof; its recorded numbers let the test suite compare without it.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path

FOLDERS = [
    "nccl-a100-rank0-of-2",
    "nccl-a100-rank0-of-16",
    "nccl-trace-diff/control",
    "nccl-trace-diff/test",
    "nccl-sampled-2-of-128",
    "nccl-v100-world1",
]


def hta_figures(folder: Path) -> dict[str, dict[str, float]]:
    from hta.trace_analysis import TraceAnalysis

    analyzer = TraceAnalysis(trace_dir=str(folder))
    temporal = analyzer.get_temporal_breakdown(visualize=False)
    overlap = analyzer.get_comm_comp_overlap(visualize=False).set_index("rank")["comp_comm_overlap_pctg"]
    figures = {}
    for row in temporal.to_dict(orient="records"):
        value = overlap.get(row["rank"])
        figures[str(row["rank"])] = {
            "window_us": float(row["kernel_time(us)"]),
            "idle_pct": row["idle_time_pctg"],
            "compute_pct": row["compute_time_pctg"],
            "non_compute_pct": row["non_compute_time_pctg"],
            "overlap_pct": None if value != value else float(value),  # NaN: no communication
        }
    return figures


def main(root: Path) -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import hta

    result = {"hta_version": getattr(hta, "__version__", "0.5.0"), "traces": {}}
    for folder in FOLDERS:
        result["traces"][folder] = hta_figures(root / folder)
    print(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
