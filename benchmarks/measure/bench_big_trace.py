"""One 500 MB+ rank trace (issues 8, 19): decoded in pieces and kept lean, against decoding it whole.

    python benchmarks/measure/bench_big_trace.py --workdir /tmp/bench-big [--megabytes 520]

Makes the trace from a real A100 NCCL trace (benchmarks/generate/make_big_trace.py), then analyses it in
fresh processes: as `commprof analyze` does (traces above 256 MB are cut into pieces decoded in worker
processes), event by event (the ijson fallback for a file that cannot be cut), and with
decoded whole (the size threshold switched off). Reports wall time and peak memory and checks all three
give the same breakdown.
Peak memory counts the decoding worker processes too: the largest sum, over samples every 50 ms, of the
proportional set size (Pss: shared pages split between the processes sharing them) of the analysing
process and its children, or the analysing process's own VmHWM when that is larger."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import REPO, SHARED_TRACES, children, peak_kib, proc_kib  # noqa: E402

SOURCE = SHARED_TRACES / "nccl-a100-rank0-of-16" / "rank0.json.gz"
ANALYSE = """
import json, sys
from pathlib import Path
import commprof.trace.parse as parse
from commprof.commands.reporting import report_from_traces
if sys.argv[2] == "whole":
    parse.STREAM_ABOVE_BYTES = 1 << 62
if sys.argv[2] == "event by event":
    parse.decode_in_chunks = parse.stream_trace
report, _ = report_from_traces([Path(sys.argv[1])], name="big", kind="analysis", workers=1)
r = report.ranks[0]
print(json.dumps([r.steps, r.step_time_ms.median, r.compute_ms, r.comm_ms, r.overlap_ms, r.idle_ms]))
"""


def pss_kib(pid: int) -> int:
    """The process's proportional set size: shared pages split between the processes sharing them."""
    return proc_kib(pid, "smaps_rollup", "Pss:")


def analyse(path: Path, mode: str) -> dict:
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", ANALYSE, str(path), mode], stdout=subprocess.PIPE, text=True)
    peak = 0
    while process.poll() is None:
        tree = sum(pss_kib(pid) for pid in [process.pid, *children(process.pid)])
        peak = max(peak, tree, peak_kib(process.pid))
        time.sleep(0.05)
    out = process.stdout.read()
    return {
        "mode": mode,
        "seconds": time.perf_counter() - start,
        "peak_mib": peak / 1024,
        "breakdown": json.loads(out) if process.returncode == 0 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--megabytes", type=float, default=520)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    big = args.workdir / "big.pt.trace.json"
    if not big.exists():
        subprocess.run(
            [
                sys.executable,
                str(REPO / "benchmarks" / "generate" / "make_big_trace.py"),
                str(SOURCE),
                str(big),
                "--megabytes",
                str(args.megabytes),
            ],
            check=True,
        )
    size = big.stat().st_size / 2**20
    rows = [analyse(big, mode) for mode in ("pieces", "event by event", "whole")]
    print(f"| {size:.0f} MiB trace | wall s | peak MiB | peak / file size |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['seconds']:.1f} | {r['peak_mib']:.0f} | {r['peak_mib'] / size:.2f} |")
    same = all(r["breakdown"] == rows[0]["breakdown"] for r in rows)
    print(f"same breakdown every way: {same} ({rows[0]['breakdown']})")
    (args.workdir / "results.json").write_text(json.dumps({"file_mib": size, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
