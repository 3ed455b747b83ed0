"""`commprof scale` end to end on CPU ranks: measured points, efficiency, predictions, outputs."""

import json

import pytest

from tests.conftest import FAST_RUN, commprof_here


@pytest.mark.slow
def test_scale_measures_and_predicts(tmp_path):
    result = commprof_here(
        "scale", "--world-sizes", "1,2", "--repeats", "1", "--predict", "4,8", "--run-id", "sc", *FAST_RUN, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "reports" / "sc"
    data = json.loads((folder / "report.json").read_text())
    one, two = data["points"]
    assert (one["world_size"], one["global_batch"], two["global_batch"]) == (1, 8, 16)  # weak: 8 per rank
    assert two["learning_rate"] == pytest.approx(2 * one["learning_rate"])  # linear scaling rule
    assert one["speedup"] == 1.0 and one["efficiency"] == 1.0
    assert two["speedup"] == pytest.approx(two["samples_per_s"] / one["samples_per_s"])
    assert two["efficiency"] == pytest.approx(two["speedup"] / 2)
    assert two["samples_per_s"] == pytest.approx(16 / (two["step_ms"]["value"] / 1000))
    assert two["step_ms"]["low"] <= two["step_ms"]["value"] <= two["step_ms"]["high"]
    assert two["allreduce_busbw_gbps"] > 0 and one["allreduce_busbw_gbps"] is None
    assert [p["world_size"] for p in data["predictions"]] == [4, 8]
    assert all(p["step_ms"] > 0 and p["best_bucket_cap_mb"] > 0 for p in data["predictions"])
    assert data["order"] == [1, 2] and data["runs"] == ["sc-ws1-r1", "sc-ws2-r1"]
    assert data["link"]["source"]["how"] == "timed" and data["link"]["source"]["calls"] >= 2  # the runs' link probes
    for run in data["runs"]:  # every size has its own full report and traces
        assert (tmp_path / "reports" / run / "report.json").is_file()
        assert (tmp_path / "traces" / run / "rank0.pt.trace.json").is_file()
    html = (folder / "report.html").read_text()
    assert "<script" not in html and "http" not in html.replace("http://www.w3.org", "")
    assert (folder / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Predicted" in (folder / "report.md").read_text()
    assert data["kind"] == "scale"
    shown = commprof_here("report", str(folder / "report.json"), cwd=tmp_path)
    assert shown.returncode == 0 and "\nMeasured\n" in shown.stdout  # saved and shown like every result
