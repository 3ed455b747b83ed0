"""commprof beside Holistic Trace Analysis 0.6.1 (package `traceinsight`) on a job over several process groups: the
hand-built NCCL traces of tests/test_groups_nccl.py (4 ranks on a dp=2 x tp=2 mesh, rank 3 300 us late at its tp
all-reduce every step, so rank 2 waits for it and ranks 0 and 1 wait for no one), with NCCL's kernel names of today
(`ncclDevKernel_*`) and of before NCCL 2.19 (`ncclKernel_*`).

    python -m venv /tmp/hta && /tmp/hta/bin/pip install traceinsight==0.6.1
    python benchmarks/check/hta_groups.py --hta-python /tmp/hta/bin/python

HTA runs in its own environment (it needs pandas and no torch; its package `hta` is also HolisticTraceAnalysis
0.5.0's, which tests/test_agreement_hta.py uses). Prints, per naming, whom each names as the straggler and each
rank's computation/communication overlap; exits 1 where commprof's answer is not the known one."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import table_header, table_row  # noqa: E402
from commprof.commands.reporting import report_from_traces  # noqa: E402
from tests.test_groups_nccl import _rank_trace  # noqa: E402

OLD_NAME = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
HTA = """
import json, logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t = TraceAnalysis(trace_dir=sys.argv[1])
out = {"overlap": {str(r["rank"]): r["comp_comm_overlap_pctg"] for r in
                   t.get_comm_comp_overlap(visualize=False).to_dict(orient="records")}}
try:
    out["stragglers"] = t.get_potential_stragglers(num_candidates=1)
except Exception as e:  # noqa: BLE001
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def write_traces(folder: Path, old_names: bool) -> None:
    for rank in range(4):
        trace = _rank_trace(rank)
        if old_names:
            for event in trace.events:
                if event["name"].startswith("ncclDevKernel"):
                    event["name"] = OLD_NAME
        trace.write(folder / f"rank{rank}.pt.trace.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hta-python", required=True, help="the interpreter of an environment with traceinsight")
    args = parser.parse_args()
    table_header("kernel names", "commprof's straggler (its group; the others' waits, ms)", "HTA's potential straggler")
    right = True
    for old_names in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            write_traces(folder, old_names)
            report = report_from_traces([folder], "hta", "analysis", workers=1)[0]
            hta = json.loads(
                subprocess.run(
                    [args.hta_python, "-c", HTA, str(folder)], capture_output=True, text=True, check=True
                ).stdout.splitlines()[-1]
            )
        cross = report.cross_rank
        waits = ", ".join(f"{r.rank}: {r.wait_ms:.2f}" for r in cross.ranks) if cross else "-"
        found = next((f.straggler for f in report.findings + report.within_noise if f.kind == "straggler"), None)
        group = f" ({found.group} {found.group_ranks})" if found is not None and found.group else ""
        theirs = hta.get("stragglers", hta.get("error"))
        names = "`ncclKernel_*` (NCCL < 2.19)" if old_names else "`ncclDevKernel_*`"
        table_row(names, f"rank {cross.straggler if cross else '-'}{group}; waits {waits}", theirs)
        right = right and cross is not None and cross.straggler == 3
    sys.exit(0 if right else 1)


if __name__ == "__main__":
    main()
