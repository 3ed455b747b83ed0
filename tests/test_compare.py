"""commprof compare: one run per backend; a backend that cannot run gets a row that says why."""

import json
import re

import pytest

from commprof.launch.mpi import mpi_unavailable
from commprof.results.store import load_report
from tests.conftest import FAST_RUN, commprof

pytestmark = pytest.mark.slow
# FAST_RUN leaves one unprofiled step: no interval, so no winner; longer runs get one only with a real interval
CLAIM = re.compile(r" wins: .*x faster than .*95% CI|No significant difference|too few unprofiled steps")


def test_backends_side_by_side(tmp_path):
    args = ("--backends", "gloo,nccl,mpi", "--run-id", "cmp", "--json", "--repeats", "2", *FAST_RUN)
    result = commprof("compare", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {r["backend"]: r for r in data["rows"]}
    assert rows["gloo"]["available"] and rows["gloo"]["step_ms"] > 0 and rows["gloo"]["busbw_by_size"]
    assert not rows["nccl"]["available"] and "NCCL has no CPU transport" in rows["nccl"]["reason"]
    if mpi_unavailable() is None:  # MPI through mpi4py trains for real: the same workload, a winner and a ratio
        assert rows["mpi"]["available"] and rows["mpi"]["busbw_by_size"], rows["mpi"]["reason"]
        assert CLAIM.search(data["summary"]), data["summary"]
    else:
        assert not rows["mpi"]["available"] and "mpi" in rows["mpi"]["reason"].lower()
    folder = tmp_path / "reports" / "cmp"
    assert (folder / "gloo" / "report.html").exists() and (folder / "compare.png").stat().st_size > 1000
    assert (tmp_path / "traces" / "cmp-gloo-r2" / "run.json").exists()  # the second interleaved launch
    assert len(rows["gloo"]["launch_ms"]) in (0, 2)  # FAST_RUN may leave no unprofiled step to take a median of
    page = (folder / "report.html").read_text()
    assert "data:image/png;base64," in page and "<script" not in page and "not run:" in page


def test_ddp_against_fsdp_on_the_same_model(strategies_compared):
    tmp_path, result = strategies_compared
    data = json.loads(result.stdout)
    assert data["compared"] == "strategy"
    rows = {r["label"]: r for r in data["rows"]}
    assert sorted(rows) == ["ddp", "fsdp"] and all(r["available"] and r["backend"] == "gloo" for r in rows.values())
    assert rows["fsdp"]["strategy"] == "fsdp" and all(r["peak_memory_mb"] > 50 for r in rows.values())
    # FSDP gathers parameters and reduce-scatters gradients: more communication than DDP's bucket all-reduces
    assert rows["fsdp"]["comm_ms"] > 0 and rows["ddp"]["comm_ms"] > 0
    assert CLAIM.search(data["summary"]), data["summary"]
    folder = tmp_path / "reports" / "ways"
    assert (folder / "fsdp" / "report.md").read_text().count("parameter all-gather") >= 2
    assert "| strategy | step ms |" in (folder / "report.md").read_text()
    for label in ("ddp", "fsdp"):  # one number for the job's step: the headline's, the table's, its own report's
        shown = f"{rows[label]['step_ms']:.1f}"
        assert f"{shown} ms" in data["summary"], data["summary"]
        own = load_report(folder / label)  # 8 steps: none unprofiled, so its slowest rank's median profiled step
        assert not own.profiler_distortion and shown == f"{max(r.step_time_ms.median for r in own.ranks):.1f}"
        assert f" {shown} " in (folder / label / "report.md").read_text()


def test_unknown_strategy_is_one_line(tmp_path):
    result = commprof("compare", "--strategies", "ddp,zero3", "--quiet", *FAST_RUN, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.strip() == "error: unknown strategy: zero3 (ddp, fsdp)"


def test_fsdp_run_names_its_collectives(strategies_compared):
    """--strategy fsdp: FSDP2 on each decoder block and the root; its all-gathers and reduce-scatters named (the FSDP
    row of the shared `compare --strategies ddp,fsdp`, a whole run of its own)."""
    tmp_path, _ = strategies_compared
    report = load_report(tmp_path / "reports" / "ways" / "fsdp" / "report.json")
    assert report.run.config.strategy == "fsdp"
    roles = {(c.phase, c.op, c.purpose) for c in report.collectives}
    # Gloo has no reduce-scatter: FSDP's runs as an all-reduce, named by what it is for
    assert roles == {
        ("forward", "all_gather", "parameter all-gather"),
        ("backward", "all_gather", "parameter all-gather"),
        ("backward", "all_reduce", "gradient reduce-scatter"),
    }
    assert not [f for f in report.findings if f.kind in ("bucket_cap", "compression")]  # DDP's knobs: not advised
    assert [p.phase for p in report.phases] == ["forward", "backward", "optimizer"]
    # its parameter all-gathers: in the forward, and again in the backward (FSDP2 reshards after the forward)
    assert all(p.comm_ms > 0 for p in report.phases[:2])
    peaks = report.run.peak_rss_mb  # on CPU, each rank's peak resident set
    assert sorted(peaks) == ["0", "1"] and all(100 < mb < 4000 for mb in peaks.values())
    page = (tmp_path / "reports" / "ways" / "fsdp" / "report.md").read_text()
    assert "Peak memory (process resident set): rank 0 " in page
