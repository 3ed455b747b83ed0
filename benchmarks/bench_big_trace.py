"""One 500 MB+ rank trace (issue 8): streamed analysis against decoding it whole.

    python benchmarks/bench_big_trace.py --workdir /tmp/bench-big [--megabytes 520]

Makes the trace from a real A100 NCCL trace (benchmarks/make_big_trace.py), then analyses it in
fresh processes: once as `commprof analyze` does (traces above 256 MB are streamed), once with
streaming switched off. Reports wall time and peak memory (VmHWM) and checks both give the same
breakdown."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from bench_analyze_ranks import peak_kib

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "nccl-a100-rank0-of-16" / "rank0.json.gz"
ANALYSE = """
import json, sys
from pathlib import Path
import commprof.trace.parse as parse
from commprof.commands.reporting import report_from_traces
if sys.argv[2] == "whole":
    parse.STREAM_ABOVE_BYTES = 1 << 62
report, _ = report_from_traces([Path(sys.argv[1])], name="big", kind="analysis", workers=1)
r = report.ranks[0]
print(json.dumps([r.steps, r.step_time_ms.median, r.compute_ms, r.comm_ms, r.overlap_ms, r.idle_ms]))
"""


def analyse(path: Path, mode: str) -> dict:
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", ANALYSE, str(path), mode], stdout=subprocess.PIPE, text=True)
    peak = 0
    while process.poll() is None:
        peak = max(peak, peak_kib(process.pid))
        time.sleep(0.05)
    out = process.stdout.read()
    return {"mode": mode, "seconds": time.perf_counter() - start, "peak_mib": peak / 1024,
            "breakdown": json.loads(out) if process.returncode == 0 else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--megabytes", type=float, default=520)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    big = args.workdir / "big.pt.trace.json"
    if not big.exists():
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_big_trace.py"), str(SOURCE), str(big),
                        "--megabytes", str(args.megabytes)], check=True)
    size = big.stat().st_size / 2**20
    rows = [analyse(big, "streamed"), analyse(big, "whole")]
    print(f"| {size:.0f} MiB trace | wall s | peak MiB | peak / file size |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['seconds']:.1f} | {r['peak_mib']:.0f} | {r['peak_mib'] / size:.2f} |")
    same = rows[0]["breakdown"] == rows[1]["breakdown"]
    print(f"same breakdown both ways: {same} ({rows[0]['breakdown']})")
    (args.workdir / "results.json").write_text(json.dumps({"file_mib": size, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
