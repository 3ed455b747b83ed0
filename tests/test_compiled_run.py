"""torch.compile over DDP (issue 52, item 7) on real compiled runs: the model named as the script wrote it, the graph's
split at DDP's buckets read from Dynamo's DDPOptimizer, the compile steps kept out of the run's figures, and tune on a
compiled script, each of its settings' graphs split at that setting's buckets."""

import json
import shutil

import pytest

from tests.conftest import REPO, built_of, commprof

pytestmark = pytest.mark.slow
SCRIPT = REPO / "tests" / "data" / "scripts" / "train_compiled.py"
PARAMETER_BYTES = 8 * (512 * 512 + 512) * 4  # eight Linear(512, 512), float32


def report(folder, name):
    return json.loads((folder / "reports" / name / "report.json").read_text())


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


def test_ddp_compiled_whole_is_not_split_and_said_so(tmp_path):
    args = ("run", "--run-id", "ddp-first", "--", str(SCRIPT), "aot_eager", "30", "ddp-first")
    result = commprof(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    compiled = report(tmp_path, "ddp-first")["run"]["compiled"]
    assert compiled["what"] == "DistributedDataParallel(Sequential)" and compiled["graphs"] == []
    md = (tmp_path / "reports" / "ddp-first" / "report.md").read_text()
    assert "Dynamo did not split its graph at DDP's buckets" in md


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
