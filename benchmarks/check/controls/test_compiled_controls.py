"""torch.compile over DDP, the launches the suite leaves out (issue 71, item 3): inductor on a nanoGPT-like script,
and tune on a compiled script, each setting's graph split at its buckets. On demand:

    python -m pytest benchmarks/check/controls/test_compiled_controls.py -p no:cacheprovider

The suite keeps one compiled run (tests/test_compiled_run.py); the commands x kinds matrix
(benchmarks/check/commands_matrix.py) runs every command on a compiled script."""

import json
import shutil

import pytest

from tests.conftest import built_of, commprof
from tests.test_compiled_run import PARAMETER_BYTES, SCRIPT, report

pytestmark = pytest.mark.slow


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None, reason="inductor needs a C++ compiler")
def test_a_compiled_model_as_nanogpt_trains_it(tmp_path):
    result = commprof("run", "--run-id", "compiled", "--", str(SCRIPT), "inductor", "40", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    run = report(tmp_path, "compiled")["run"]
    compiled = run["compiled"]
    assert (compiled["what"], compiled["backend"]) == ("Sequential", "inductor")
    assert compiled["steps"][0] == 1
    (graph,) = compiled["graphs"]  # one graph, split in two: DDP's 1 MiB first bucket, then the rest under 25 MiB
    assert len(graph) == 2 and sum(graph) == PARAMETER_BYTES
    assert compiled["bucket_cap_bytes"] == 25 * 2**20
    assert built_of(run, "ddp")[0]["module"] == "Sequential"  # not OptimizedModule
    whole = report(tmp_path, "compiled")["whole_run"]
    assert whole["compiled_steps"] == compiled["steps"] and whole["compiled_ms"] > 0
    assert not set(compiled["steps"]) & {s["step"] for s in whole["standouts"]}
    md = (tmp_path / "reports" / "compiled" / "report.md").read_text()
    assert "Sequential (2,101,248 parameters, compiled: torch.compile, inductor)" in md
    assert "Dynamo split its graph at DDP's buckets (DDPOptimizer, at DDP's bucket cap of 25.00 MiB) into 2 parts" in md


def test_tune_on_a_compiled_script_splits_each_settings_graph_at_its_buckets(tmp_path):
    args = ("tune", "--run-id", "tuned", "--repeats", "2", "--max-repeats", "2", "--max-steps", "8", "--")
    result = commprof(*args, str(SCRIPT), "aot_eager", "100", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    tuned = report(tmp_path, "tuned")
    assert tuned["run"]["compiled"]["backend"] == "aot_eager"
    for setting in tuned["sweep"]["settings"]:
        launch = json.loads((tmp_path / "traces" / "tuned" / setting["label"] / "run.json").read_text())
        (graph,) = launch["compiled"]["graphs"]
        cap_mb = setting["options"].get("bucket_cap_mb") or 25
        assert launch["compiled"]["bucket_cap_bytes"] == int(cap_mb * 2**20), setting["label"]
        # DDP buckets by parameter, DDPOptimizer by module (a layer's weight and bias together): at most one apart
        assert abs(len(graph) - len(setting["bucket_sizes"])) <= 1 and sum(graph) == PARAMETER_BYTES, setting["label"]
