"""A model with an unused parameter, for real on 2 Gloo ranks: without --find-unused-parameters the run
fails with the line of DDP's error that says what is wrong (its sweep with the option runs on demand:
benchmarks/check/controls/test_kind_sweeps.py)."""

import pytest

from tests.conftest import FAST_RUN, REPO, commprof

MODEL = f"{REPO / 'tests' / 'data' / 'unused_param_model.py'}:build"
pytestmark = pytest.mark.slow


def test_the_failure_names_what_is_wrong(tmp_path):
    result = commprof("run", "--model", MODEL, "--run-id", "unused", "--quiet", *FAST_RUN, cwd=tmp_path)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert (
        "failed: RuntimeError: Expected to have finished reduction in the prior iteration before starting a new "
        "one. (some parameters received no gradient: pass --find-unused-parameters)" in line
    ), line
    assert "TORCH_DISTRIBUTED_DEBUG" not in line and "(worker logs: " in line
