"""A model with an unused parameter, for real on 2 Gloo ranks: without --find-unused-parameters the run
fails with the line of DDP's error that says what is wrong (its sweep with the option runs on demand:
benchmarks/check/controls/test_kind_sweeps.py)."""

import pytest

from commprof.errors import what_went_wrong
from commprof.launch.runlog import read_run_json
from commprof.render.failure_words import failure_text
from commprof.results.failure_facts import OwnError
from tests.conftest import FAST_RUN, REPO, commprof_here
from tests.test_error_lines import DDP_UNUSED

MODEL = f"{REPO / 'tests' / 'data' / 'unused_param_model.py'}:build"
pytestmark = pytest.mark.slow


def test_the_failure_names_what_is_wrong(tmp_path):
    result = commprof_here("run", "--model", MODEL, "--run-id", "unused", "--quiet", *FAST_RUN, cwd=tmp_path)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    # a rank's own error: DDP's, said by its line that says what is wrong (as for the message torch 2.13 records,
    # tests/test_error_lines.py), with what to do
    record = read_run_json(tmp_path / "traces" / "unused")
    assert record is not None and isinstance(record.failure, OwnError), record
    assert record.failure.message == what_went_wrong(DDP_UNUSED), record.failure
    assert line.startswith(f"error: {failure_text(record.failure)} (worker logs: "), line
    assert "TORCH_DISTRIBUTED_DEBUG" not in line
