"""tune and a refused knob on a DeepSpeed script (issue 71, item 3: commands x kinds on demand). On demand:

python -m pytest benchmarks/check/controls/test_deepspeed_controls.py -p no:cacheprovider"""

import pytest

from tests.conftest import REPO, commprof, load_json
from tests.test_deepspeed import NO_DEEPSPEED, SCRIPT

pytestmark = pytest.mark.slow


@pytest.mark.slow
@pytest.mark.skipif(NO_DEEPSPEED, reason="deepspeed is not installed (optional: pip install 'commprof[deepspeed]')")
def test_tune_without_a_strategy_tunes_the_kind_of_job_the_script_builds(tmp_path):
    """Issue 53: `tune -- ds_zero.py` had ended in "AttributeError: 'DDPOptions' object has no attribute
    'reduce_bucket_size'". The script's first launch tells that it trains with DeepSpeed: tune says so and tunes ZeRO's
    reduce_bucket_size."""
    args = ("tune", "--run-id", "t", "--max-steps", "8", "--repeats", "2", "--", str(SCRIPT), "--stage", "2")
    result = commprof(*args, cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "the script trains with DeepSpeed (ZeRO stage 2), not DistributedDataParallel: tuning ZeRO's" in (
        result.stderr
    )
    report = load_json(tmp_path / "reports" / "t" / "report.json")
    assert report["sweep"]["strategy"] == "deepspeed"
    assert any(s["options"].get("reduce_bucket_size") for s in report["sweep"]["settings"])


@pytest.mark.slow
@pytest.mark.skipif(NO_DEEPSPEED, reason="deepspeed is not installed (optional: pip install 'commprof[deepspeed]')")
def test_a_knob_that_does_nothing_to_the_job_is_refused_in_one_line_naming_the_one_that_would(tmp_path):
    """Issue 53: `sweep --bucket-cap-mb 1,25 -- ds_zero.py` had run nine launches and advised "keep the script's own
    setting" of a DDP the script never built."""
    args = ("sweep", "--run-id", "s", "--bucket-cap-mb", "1,25", "--max-steps", "8", "--repeats", "2", "--")
    result = commprof(*args, str(SCRIPT), "--stage", "1", cwd=tmp_path, timeout=600)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert "the script trains with DeepSpeed (ZeRO stage 1), not DistributedDataParallel" in line
    assert "--strategy deepspeed --reduce-bucket-size" in line and "Traceback" not in result.stderr
    assert not (tmp_path / "traces" / "s").exists()  # the one launch that told the kind, not left behind
    ddp = REPO / "tests" / "data" / "scripts" / "train_default_ddp.py"
    args = ("sweep", "--run-id", "d", "--strategy", "deepspeed", "--reduce-bucket-size", "5e7", "--max-steps", "8")
    result = commprof(*args, "--repeats", "2", "--", str(ddp), "--epochs", "1", cwd=tmp_path, timeout=600)
    assert result.returncode == 2, result.stderr[-3000:]
    assert (
        "the script trains with DistributedDataParallel, not DeepSpeed: ZeRO's options do nothing to it; leave out "
        "--strategy deepspeed"
    ) in result.stderr
