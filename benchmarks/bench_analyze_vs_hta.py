"""commprof's analysis vs Holistic Trace Analysis on one large trace, as whole processes.

    python benchmarks/bench_analyze_vs_hta.py ../shared/traces/nccl-v100-rank1-of-2-large --repeats 5

Each repeat runs both tools in fresh processes, interleaved (A B A B ...), and records wall time
and peak resident memory (ru_maxrss of the child). HTA must be installed for its half.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

COMMPROF = """
import sys
from pathlib import Path
from commprof.analysis.analyze import analyze
from commprof.trace.load import load_run
report = analyze(load_run([Path(sys.argv[1])]), "bench", "analysis")
import resource
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

HTA = """
import sys, logging, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
analyzer.get_comm_comp_overlap(visualize=False)
analyzer.get_temporal_breakdown(visualize=False)
import resource
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def measure(code: str, folder: str) -> tuple[float, float]:
    """Wall seconds and the child's own peak RSS in MiB (it prints ru_maxrss, KiB on Linux)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, folder], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return wall, int(done.stdout.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    times = {"commprof": [], "hta": []}
    peaks = {"commprof": [], "hta": []}
    for _ in range(args.repeats):
        for name, code in (("commprof", COMMPROF), ("hta", HTA)):
            wall, peak = measure(code, args.folder)
            times[name].append(wall)
            peaks[name].append(peak)
    result = {name: {"median_s": statistics.median(t), "min_s": min(t), "max_s": max(t),
                     "peak_mib": statistics.median(peaks[name])} for name, t in times.items()}
    result["speedup"] = result["hta"]["median_s"] / result["commprof"]["median_s"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
