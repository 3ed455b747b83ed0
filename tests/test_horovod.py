"""A plain Horovod script under commprof (issue 54): launched as horovodrun --gloo launches it (commprof starts
Horovod's rendezvous server and gives each rank horovodrun's environment), its allreduces read from Horovod's
timeline into rank 0's trace, its fusion buffer set (--strategy horovod --fusion-threshold-mb) and tuned. Skipped
where Horovod is not installed (bash benchmarks/install_horovod.sh builds it)."""

import importlib.util
import json

import pytest

from commprof.commands.script_kind import OtherKind, check_kind
from commprof.kinds import HOROVOD
from commprof.launch.runlog import read_run_json
from commprof.render.progress_words import tune_instead
from commprof.results.job import BuiltHorovod
from commprof.results.store import load_report
from commprof.settings import DDPOptions
from tests.conftest import REPO, built_of, commprof

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("horovod") is None,
        reason="Horovod is not installed (bash benchmarks/install_horovod.sh builds it into this environment)",
    ),
]
SCRIPT = REPO / "tests" / "data" / "scripts" / "train_horovod.py"
TENSORS = 26  # 13 Linear layers: a weight and a bias each, one allreduce each when nothing is fused


def _run(tmp_path, name, *options):
    result = commprof("run", "--run-id", name, "--max-steps", "30", *options, "--", str(SCRIPT), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((tmp_path / "reports" / name / "report.json").read_text())


def _allreduces_per_step(report):
    return sum(c["calls_per_step"] for c in report["collectives"] if c["op"] == "all_reduce")


def test_a_horovod_script_is_profiled_its_allreduces_read_from_its_timeline(tmp_path):
    report = _run(tmp_path, "h")
    run = report["run"]
    assert run["model"] == "Horovod DistributedOptimizer(SGD)" and run["parameters"] == 792_074
    (built,) = built_of(run, "horovod")
    assert built["fusion_threshold_bytes"] == 128 * 2**20 and built["applied"] == {}
    assert (tmp_path / "traces" / "h" / "horovod_timeline.json").exists()
    zero, one = report["ranks"]
    assert zero["comm_ms"] > 0 and one["comm_ms"] == 0  # the timeline is the coordinator's, rank 0's
    gradients = sum(built["parameter_sizes"])
    sizes = [c["bytes"] for c in report["collectives"] if c["op"] == "all_reduce"]
    assert max(sizes) <= gradients + 4  # fused gradients (and the script's nothing else), no larger than all of them
    assert _allreduces_per_step(report) < TENSORS  # fused: fewer calls than tensors
    assert run["link_probe"]  # measured on a Gloo group of commprof's own: the script has no torch.distributed group
    assert run["script_notes"]["horovod"]
    assert run["script_notes"]["communicated"]  # Horovod communicates


def test_a_fusion_threshold_of_zero_allreduces_every_tensor_alone(tmp_path):
    report = _run(tmp_path, "h0", "--strategy", "horovod", "--fusion-threshold-mb", "0")
    assert built_of(report["run"], "horovod")[0]["applied"] == {"HOROVOD_FUSION_THRESHOLD": "0"}
    assert _allreduces_per_step(report) == pytest.approx(TENSORS)
    markdown = (tmp_path / "reports" / "h0" / "report.md").read_text()
    run = load_report(tmp_path / "reports" / "h0").run
    (built,) = run.job.of(BuiltHorovod)  # a fusion buffer of 0 (commprof's), Horovod's own cycle of 1 ms
    assert (built.fusion_threshold_bytes, built.cycle_time_ms) == (0, 1.0)
    assert f"horovod={run.settings()['horovod']}" in markdown  # the header's words: test_render_kind_words.py


def test_tune_finds_the_script_is_horovod_and_tunes_its_fusion_buffer(tmp_path):
    args = ("tune", "--run-id", "t", "--repeats", "2", "--max-steps", "12", "--", str(SCRIPT))
    result = commprof(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    # DDP's settings, tune's own, do nothing to the job its launch built: it says it tunes Horovod's fusion buffer
    # instead, in render's words (test_render_kind_words.py)
    run = read_run_json(next((tmp_path / "traces").rglob("run.json")).parent)
    with pytest.raises(OtherKind) as refused:
        check_kind(run, DDPOptions())
    assert refused.value.built is HOROVOD
    knob = f"{HOROVOD.short}'s {HOROVOD.size_knob}"
    assert tune_instead(refused.value.what, knob, "horovod") in result.stderr + result.stdout
    sweep = json.loads((tmp_path / "reports" / "t" / "report.json").read_text())["sweep"]
    labels = [s["label"] for s in sweep["settings"]]
    assert labels[0] == "script-own" and "fusion-1mb" in labels  # 8, 32, 128 MiB fuse all 3 MiB alike: measured once
    assert sweep["strategy"] == "horovod"
    assert sweep["paste"] is None or "HOROVOD_FUSION_THRESHOLD=" in sweep["paste"]
