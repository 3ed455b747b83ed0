"""commprof on a GPU: a real run on one CUDA device over NCCL, and over Gloo moving CUDA tensors through the host.
Marked `cuda`: they skip, with the reason, where there is no GPU (tests/conftest.py); benchmarks/gpu_validation.sh
runs the longer checks on a lent GPU machine (docs/gpu-validation.md)."""

import pytest

from tests.conftest import FAST_RUN, commprof, load_json

pytestmark = [pytest.mark.slow, pytest.mark.cuda]


@pytest.mark.parametrize("backend", ["nccl", "gloo"])
def test_a_run_on_one_gpu_times_its_steps_on_the_device(tmp_path, backend):
    args = ["run", "--gpus", "1", "--backend", backend, "--run-id", backend, "--quiet", *FAST_RUN]
    result = commprof(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = load_json(tmp_path / "reports" / backend / "report.json")
    assert (report["run"]["device"], report["run"]["backend"]) == ("cuda", backend)
    (rank,) = report["ranks"]
    assert rank["compute_ms"] > 0 and rank["step_time_ms"]["median"] > 0  # the device's kernels were found
    assert report["run"]["peak_gpu_memory_mb"]["0"]["allocated"] > 0
