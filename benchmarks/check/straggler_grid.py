"""The straggler's control grid (issue 52, item 3): a rank slowed by 30 ms a step {before its batch, in its forward,
in its backward, in its optimizer step} x {one DDP bucket, two (the backward's sleep then falls between them)} x {rank
0, rank 1}, each a real run of tests/data/scripts/slowed_phase.py on 2 CPU ranks over Gloo; each must name the slowed
rank the straggler, its gain about the 30 ms with an interval above 0, and point at the part of the step that grew.
Then the same on two hosts of the multi-host bed (tests/netbed.py, one rank each, 1000 Mbit/s, where root may make
namespaces): rank 0 on the first host, rank 1 on the second. Then identical ranks,
three launches each ({the script unslowed, one bucket and two; commprof's own model; torch.compile over DDP}, and the
unslowed script on two hosts): none may claim a straggler or an input stall.

    python benchmarks/check/straggler_grid.py [--workdir DIR]

Prints Markdown tables (docs/semantics.md, "The straggler's control grid") and exits 1 when a cell misses."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA, commprof_argv, table_header, table_row  # noqa: E402
from tests.netbed import netbed, unavailable  # noqa: E402

SCRIPT = TESTS_DATA / "scripts" / "slowed_phase.py"
PARTS = {  # where the time went -> the parts of the step the straggler's advice may rightly look at
    "input": ("start_idle_ms",),
    "forward": ("forward_idle_ms",),
    "backward": ("compute_ms", "backward_idle_ms"),  # a gradient hook runs inside autograd
    "optimizer": ("optimizer_idle_ms",),
}


SHORT = ("--max-steps", "24", "--schedule", "3,1,6")
# two hosts: the link's jitter (tbf's bursts) spreads each step's waits, so 24 steps gave intervals from 2 to 55 ms
# around a 28 ms straggler; 60 give the evidence the claim needs
ACROSS_HOSTS = ("--max-steps", "60", "--schedule", "3,1,6")
IDENTICAL = {  # what runs on identical ranks -> commprof's arguments after the run id
    "script, one bucket": (*SHORT, "--", str(SCRIPT), "none", "0"),
    "script, two buckets": (*SHORT, "--", str(SCRIPT), "none", "0", "1100"),
    "commprof's model": ("--steps", "24", "--schedule", "3,1,6"),
    "torch.compile over DDP": (
        *("--max-steps", "40", "--"),
        *(str(TESTS_DATA / "scripts" / "train_compiled.py"), "aot_eager", "100"),
    ),
}
REPEATS = 3


def launch(run_id: str, args: Sequence[str], work: Path, bed: Any = None) -> tuple[dict | None, str]:
    """One run, on this machine or on every host of `bed`; its report (None where it failed) and why."""
    argv = commprof_argv("run", "--run-id", run_id, "--quiet", *args)
    if bed is None:
        done = [subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600)]
        head = work
    else:
        nodes = ("--nodes", "2", "--procs", "1", "--rdzv-endpoint", bed.rdzv_endpoint)
        argv = commprof_argv("run", "--run-id", run_id, "--quiet", *nodes, *args)
        done, head = bed.run_on_each([argv] * 2, timeout=600), bed.hosts[0].folder
    failed = [d for d in done if d.returncode != 0]
    if failed:
        return None, f"exit {failed[0].returncode}: {failed[0].stderr.strip().splitlines()[-1:]}"
    return json.loads((head / "reports" / run_id / "report.json").read_text()), ""


def run_cell(where: str, width: int | None, rank: int, work: Path, bed: Any = None) -> tuple[bool, str]:
    run_id = f"{where}-{width or 'one'}-{rank}" + ("-hosts" if bed else "")
    args = [*(ACROSS_HOSTS if bed else SHORT), "--", str(SCRIPT), where, str(rank), *([str(width)] if width else [])]
    report, failed = launch(run_id, args, work, bed)
    if report is None:
        return False, failed
    straggler = next((f for f in report["findings"] if f["kind"] == "straggler"), None)
    stalls = [f for f in report["findings"] if f["kind"] == "input_stall"]
    if straggler is None:
        noise = next((f for f in report["within_noise"] if f["kind"] == "straggler"), None)
        return False, "no straggler" + (f" (within the noise: {noise['gain_ms']})" if noise else "")
    gain = straggler["gain_ms"]
    facts = straggler["facts"]
    said = facts["rank"] == rank and 20 <= gain["value"] <= 45 and gain["low"] > 0
    part = facts["look_at"] in PARTS[where]
    stall_ok = bool(stalls) == (where == "input")
    outcome = f"{gain['value']:.1f} ms ({gain['low']:.1f}-{gain['high']:.1f}); {straggler['action'][:70]}..."
    if not stall_ok:
        outcome += " input stall " + ("missing" if where == "input" else "claimed")
    return said and part and stall_ok, outcome


def claims(report: dict | None) -> str:
    """What an identical-ranks run claimed of one rank against the others: '' where nothing."""
    if report is None:
        return "failed"
    found = [f for f in report["findings"] if f["kind"] in ("straggler", "input_stall")]
    return "; ".join(f"{f['kind']}: {f['title'][:60]}" for f in found)


def identical_cell(name: str, args: Sequence[str], work: Path, bed: Any = None) -> tuple[bool, str]:
    said = []
    for repeat in range(1, REPEATS + 1):
        run_id = "same-" + re.sub(r"\W+", "-", name) + f"-{repeat}" + ("-hosts" if bed else "")
        report, failed = launch(run_id, args, work, bed)
        said.append(failed or claims(report))
    claimed = [s for s in said if s]
    return not claimed, f"{len(claimed)} of {REPEATS}" + (f": {claimed[0]}" if claimed else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="where the runs write (default: a temporary folder)")
    parser.add_argument("--two-hosts-only", action="store_true", help="only the cells on two hosts")
    given = parser.parse_args()
    work = given.workdir or Path(tempfile.mkdtemp(prefix="straggler-grid-"))
    work.mkdir(parents=True, exist_ok=True)
    table_header("slowed in", "buckets", "rank", "hosts", "named", "gain, advice")
    missed = 0
    for where in PARTS if not given.two_hosts_only else ():
        for width in (None, 1100):
            for rank in (0, 1):
                ok, outcome = run_cell(where, width, rank, work)
                missed += not ok
                table_row(where, "two" if width else "one", rank, "one", "yes" if ok else "NO", outcome)
    why_not = unavailable()
    if why_not is None:
        with netbed(2, 1000, work / "bed") as bed:
            for where in PARTS:
                for width in (None, 1100):
                    for rank in (0, 1):
                        ok, outcome = run_cell(where, width, rank, work, bed)
                        missed += not ok
                        table_row(where, "two" if width else "one", rank, "two", "yes" if ok else "NO", outcome)
    print()
    table_header("identical ranks", "hosts", "no claim", f"launches with a claim (of {REPEATS})")
    for name, args in IDENTICAL.items() if not given.two_hosts_only else ():
        ok, outcome = identical_cell(name, args, work)
        missed += not ok
        table_row(name, "one", "yes" if ok else "NO", outcome)
    if why_not is None:
        with netbed(2, 1000, work / "bed-same") as bed:
            args = (*ACROSS_HOSTS, *IDENTICAL["script, two buckets"][len(SHORT) :])
            ok, outcome = identical_cell("script, two buckets", args, work, bed)
            missed += not ok
            table_row("script, two buckets", "two", "yes" if ok else "NO", outcome)
    else:
        print(f"\nno two-host cells: {why_not}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
