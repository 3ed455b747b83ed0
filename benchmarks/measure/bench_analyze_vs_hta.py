"""commprof's analysis vs Holistic Trace Analysis on one large trace, as whole processes.

    python benchmarks/measure/bench_analyze_vs_hta.py ../shared/traces/nccl-v100-rank1-of-2-large --repeats 5 \
        [--hta-python /tmp/hta/bin/python]

Each repeat runs, in fresh processes and interleaved: `commprof analyze` as a user runs it (report.json, md,
html with plots, timeline.json and the TensorBoard event files written), commprof's core alone (load,
classify, analyze), and HTA (load, overlap, temporal breakdown). It records wall time and peak resident
memory (ru_maxrss of the child; for `commprof analyze`, plus its figure process's). HTA runs in --hta-python (its
own virtual environment) or this one.
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

COMMAND = """
import sys, tempfile
from commprof.cli.app import main
with tempfile.TemporaryDirectory() as reports:
    try:
        main(["analyze", sys.argv[1], "--name", "bench", "--reports-dir", reports, "--quiet"])
    except SystemExit as exc:
        if exc.code:
            raise
import resource  # its own peak plus its figure process's (forked: their shared pages counted twice)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
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


def measure(code: str, folder: str, python: str = sys.executable) -> tuple[float, float]:
    """Wall seconds and the child's own peak RSS in MiB (it prints ru_maxrss, KiB on Linux)."""
    start = time.perf_counter()
    done = subprocess.run([python, "-c", code, folder], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return wall, int(done.stdout.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hta-python", default=sys.executable, help="the Python that has HTA installed")
    args = parser.parse_args()
    tools = (
        ("commprof analyze", COMMAND, sys.executable),
        ("commprof core", COMMPROF, sys.executable),
        ("hta", HTA, args.hta_python),
    )
    times = {name: [] for name, _, _ in tools}
    peaks = {name: [] for name, _, _ in tools}
    for _ in range(args.repeats):
        for name, code, python in tools:
            wall, peak = measure(code, args.folder, python)
            times[name].append(wall)
            peaks[name].append(peak)
    result = {
        name: {
            "median_s": statistics.median(t),
            "min_s": min(t),
            "max_s": max(t),
            "peak_mib": statistics.median(peaks[name]),
        }
        for name, t in times.items()
    }
    for name in ("commprof analyze", "commprof core"):
        result[name]["speedup_vs_hta"] = result["hta"]["median_s"] / result[name]["median_s"]
        result[name]["memory_vs_hta"] = result[name]["peak_mib"] / result["hta"]["peak_mib"]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
