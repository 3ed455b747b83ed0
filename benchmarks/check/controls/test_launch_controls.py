"""Launches the suite makes once in another form (issue 71, item 3): two emulated nodes of the built-in model,
each in a folder of its own (the suite's two-host job, tests/test_multihost.py, and its two nodes from a SLURM step,
tests/test_launch_env.py, launch several nodes), and Ctrl-C to a user's script (the suite sends it to the built-in
run, tests/test_interrupt_runs.py). On demand:

    python -m pytest benchmarks/check/controls/test_launch_controls.py -p no:cacheprovider"""

import json
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from commprof.results.store import load_report
from tests.conftest import commprof
from tests.test_interrupt_runs import FAST, SCRIPTS, assert_partial_report_beside_the_run, interrupted
from tests.test_run_e2e import SHORT_RUN

pytestmark = pytest.mark.slow


def two_nodes(folders: list[Path], procs: int, *args: str) -> None:
    """`commprof run *args` as two nodes of `procs` ranks each on this machine, meeting at a c10d rendezvous on a free
    loopback port, node i started in folders[i]; both end with exit 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "commprof", "run", "--nodes", "2", "--procs", str(procs)]
    argv += ["--rdzv-endpoint", f"127.0.0.1:{port}", *args]
    nodes = [subprocess.Popen(argv, cwd=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f in folders]
    outputs = [node.communicate(timeout=300) for node in nodes]
    assert [n.returncode for n in nodes] == [0, 0], outputs


def test_two_nodes_with_node_local_traces_folders(tmp_path):
    """Each 'node' runs in a folder of its own, as with a node-local traces/: every node writes its ranks'
    traces and step logs there; each rank digests its own trace, and the node with rank 0 reports on all
    four ranks, as `commprof analyze` does over the traces copied together."""
    folders = [tmp_path / "node0", tmp_path / "node1"]
    for folder in folders:
        folder.mkdir()
    two_nodes(folders, 2, "--run-id", "local", "--quiet", *SHORT_RUN)
    ranks = [sorted(int(p.name[4]) for p in (f / "traces" / "local").glob("rank*.pt.trace.json")) for f in folders]
    assert sorted(ranks) == [[0, 1], [2, 3]]
    assert all(len(list((f / "traces" / "local").glob("rank*.steps.json"))) == 2 for f in folders)
    (head,) = [f for f in folders if (f / "reports" / "local" / "report.json").exists()]
    (other,) = [f for f in folders if f != head]
    # the other node's ranks travel to the head as digests, not as traces
    assert sorted(p.name for p in (head / "traces" / "local" / "digests").iterdir()) == [
        "rank2.msgpack",
        "rank3.msgpack",
    ]
    report = load_report(head / "reports" / "local" / "report.json")
    assert [r.rank for r in report.ranks] == [0, 1, 2, 3] and report.missing_ranks == []
    record = json.loads((head / "traces" / "local" / "run.json").read_text())
    assert [r["trace_path"] for r in record["ranks"]] == [
        str((f / "traces" / "local" / f"rank{r}.pt.trace.json").resolve())
        for f, r in ((head, 0), (head, 1), (other, 2), (other, 3))
    ]

    together = tmp_path / "together"
    shutil.copytree(head / "traces" / "local", together)
    shutil.rmtree(together / "digests")
    for trace in (other / "traces" / "local").glob("rank*.pt.trace.json"):
        shutil.copy(trace, together)
    result = commprof("analyze", str(together), "--name", "together", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    copied = load_report(tmp_path / "reports" / "together" / "report.json")
    assert report.ranks == copied.ranks and report.steps == copied.steps
    assert report.collectives == copied.collectives and report.cross_rank == copied.cross_rank
    assert report.timeline == copied.timeline and report.findings == copied.findings


def test_ctrl_c_stops_a_users_script(tmp_path):
    script = ["--max-steps", "400", *FAST[:2], "--", str(SCRIPTS / "train_epochs.py"), "--epochs", "50"]
    code, lines = interrupted(tmp_path, "script", signal.SIGINT, script, after_steps=9, whole_group=True)
    assert code == 130, lines
    assert_partial_report_beside_the_run(tmp_path, "script", lines, of="400")
