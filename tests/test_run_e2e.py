"""Real multi-process DDP over Gloo through the CLI, as a user runs it."""

import subprocess
import sys

import pytest

from commprof.results.store import load_report
from tests.conftest import FAST_RUN, commprof_here, load_json

pytestmark = pytest.mark.slow
# 4 steps, 2 of them profiled: what the tests of options, FSDP and several nodes check needs no more
SHORT_RUN = ["--steps", "4", "--schedule", "1,1,2", "--batch-size", "8"]
# 2 samples a rank are as good for what is checked
TINY_BATCH_RUN = [*SHORT_RUN[:-1], "2"]


def test_run_writes_traces_run_json_and_report(cpu_run):
    cwd, result = cpu_run
    run_dir = cwd / "traces" / "e2e"
    traces = sorted(p.name for p in run_dir.glob("*.pt.trace.json"))
    assert traces == ["rank0.pt.trace.json", "rank1.pt.trace.json"]
    for name in traces:
        info = load_json(run_dir / name)["distributedInfo"]
        assert info["backend"] == "gloo" and info["world_size"] == 2
    meta = load_json(run_dir / "run.json")
    assert meta["world_size"] == 2 and meta["config"]["backend"] == "gloo" and meta["parameters"] > 0
    assert meta["versions"]["torch"] and meta["hosts"] and meta["start_time"] < meta["end_time"]
    assert [len(r["step_ms"]) for r in meta["ranks"]] == [9, 9]
    assert "Where the step goes" in result.stdout and "all_reduce" in result.stdout


def test_report_numbers_are_consistent(cpu_run):
    cwd, _ = cpu_run
    report = load_report(cwd / "reports" / "e2e" / "report.json")
    # steps 3-6 profiled (--schedule 2,1,4) against step 8 (step 7 waits for the traces), from run.json's times
    meta = load_json(cwd / "traces" / "e2e" / "run.json")
    assert [(d.rank, d.unprofiled_ms) for d in report.profiler_distortion] == [
        (r["rank"], r["step_ms"][8]) for r in meta["ranks"]
    ]
    assert "Profiler's own cost" in (cwd / "reports" / "e2e" / "report.md").read_text()
    assert report.schema_version == 2 and [r.rank for r in report.ranks] == [0, 1]
    for rank in report.ranks:
        assert rank.steps == 4  # the active window
        window = rank.step_time_ms.mean
        assert abs(rank.compute_ms + rank.exposed_comm_ms + rank.idle_ms - window) <= 0.01 * window
        assert 0 <= rank.overlap_ms <= min(rank.compute_ms, rank.comm_ms) + 1e-9
        assert rank.comm_ms > 0 and rank.compute_ms > 0
    all_reduces = [c for c in report.collectives if c.op == "all_reduce"]
    ddp_buckets = load_json(cwd / "traces" / "e2e" / "run.json")["ranks"][0]["ddp"]["rebuilt_bucket_sizes"]
    # the sizes found in the traces are exactly the buckets DDP reports it built, one call each per step
    assert sorted(c.bytes for c in all_reduces) == sorted(int(b) for b in ddp_buckets.split(","))
    assert all(c.calls_per_step == 1 for c in all_reduces)
    assert (cwd / "reports" / "e2e" / "report.md").read_text().startswith("# commprof report: e2e")


def test_report_rerenders_without_traces(cpu_run):
    cwd, _ = cpu_run
    result = commprof_here("report", "reports/e2e/report.json", "--format", "md", cwd=cwd)
    assert result.returncode == 0 and "| rank |" in result.stdout
    assert commprof_here("report", "e2e", "--format", "md", cwd=cwd).stdout == result.stdout  # by its run id


def test_python_m_commprof(tmp_path):
    result = subprocess.run([sys.executable, "-m", "commprof", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "run" in result.stdout and "analyze" in result.stdout


def test_run_failure_names_the_rank(tmp_path):
    bad = tmp_path / "bad_model.py"
    bad.write_text(
        "import os, torch\n"
        "class M(torch.nn.Linear):\n"
        "    def forward(self, x):\n"
        "        if self.training and os.environ.get('RANK') == '1':\n"
        "            raise RuntimeError('rank one exploded')\n"
        "        return super().forward(x)\n"
        "def build():\n    return M(4, 2)\n"
    )
    result = commprof_here("run", "--model", f"{bad}:build", *FAST_RUN, "--quiet", cwd=tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "rank 1" in last and "rank one exploded" in last and "Traceback" not in result.stderr


def test_ddp_options_reach_the_traces(tmp_path):
    """fp16 compression halves every all-reduce; accumulation keeps one all-reduce per bucket per step. (The mlp: a
    transformer's steps in bf16 take twice as long on this CPU, for the same checks.)"""
    result = commprof_here(
        "run",
        "--model",
        "mlp",
        "--precision",
        "bf16",
        "--comm-hook",
        "fp16",
        "--grad-accum",
        "2",
        "--gradient-as-bucket-view",
        "--run-id",
        "opts",
        "--quiet",
        *TINY_BATCH_RUN,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = load_report(tmp_path / "reports" / "opts" / "report.json")
    buckets = [int(b) for b in report.run.ddp["0"]["rebuilt_bucket_sizes"].split(",")]
    assert report.run.config.ddp.comm_hook == "fp16"
    assert all(c.dtype == "c10::Half" and c.calls_per_step == 1 for c in report.collectives)
    assert sorted(c.bytes for c in report.collectives) == sorted(b // 2 for b in buckets)
    assert {c.phase for c in report.collectives} == {"backward"}  # DDP's bucket all-reduces run in the backward
