"""Weak scaling of a user's script (issue 71, item 3: the suite keeps its strong scaling, tests/test_scale_script.py).
On demand:

    python -m pytest benchmarks/check/controls/test_scale_controls.py -p no:cacheprovider"""

import json

import pytest

from tests.test_scale_script import _scale

pytestmark = pytest.mark.slow


def test_weak_scaling_keeps_the_scripts_batch_and_counts_steps_where_the_batch_is_not_told(tmp_path):
    report, out = _scale(tmp_path, "w")
    assert report["mode"] == "weak" and report["batch_argument"] is None
    first, second = report["points"]
    assert (first["per_rank_batch"], second["per_rank_batch"]) == (1, 1)
    # rank-steps/s: every rank's optimizer steps per second, from the job's step time
    assert second["samples_per_s"] == pytest.approx(2 * 1000 / second["step_ms"]["value"])
    assert second["speedup"] == pytest.approx(second["samples_per_s"] / first["samples_per_s"])
    assert "rank-steps/s" in out and "throughput is in rank-steps/s" in out
    run = json.loads((tmp_path / "traces" / "w-ws2-r1" / "run.json").read_text())
    assert "--batch-size" not in run["script"]  # the script's own batch, as written
