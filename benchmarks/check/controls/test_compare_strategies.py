"""compare --strategies ddp,fsdp on commprof's transformer, and the FSDP run it makes (issue 71, item 3: the suite
keeps compare's launch across backends, tests/test_compare.py). On demand:

    python -m pytest benchmarks/check/controls/test_compare_strategies.py -p no:cacheprovider"""

import json

import pytest

from commprof.results.store import load_report
from tests.test_compare import CLAIM

pytestmark = pytest.mark.slow


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
