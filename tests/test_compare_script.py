"""compare on a user's script (issue 53): run unmodified on each backend, its init_process_group given that backend
in place of the one it names; a backend a script cannot run on here is a row that says why. Before, `compare --
train.py` ended in "Got unexpected extra argument(s)"."""

import json

import pytest

from tests.conftest import REPO, commprof_here

pytestmark = pytest.mark.slow
SCRIPT = REPO / "tests" / "data" / "scripts" / "asks_backend.py"


def test_compare_runs_a_script_on_each_backend_it_can_run_on(tmp_path):
    args = ("compare", "--run-id", "c", "--backends", "gloo,mpi", "--max-steps", "12", "--schedule", "2,1,4")
    result = commprof_here(*args, "--", str(SCRIPT), "mpi", "40", cwd=tmp_path)  # the script names mpi
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {r["backend"]: r for r in json.loads((tmp_path / "reports" / "c" / "report.json").read_text())["rows"]}
    assert rows["gloo"]["available"] and rows["gloo"]["step_ms"] > 0
    assert not rows["mpi"]["available"] and "needs mpirun" in rows["mpi"]["reason"]
    run = json.loads((tmp_path / "traces" / "c-gloo" / "run.json").read_text())
    assert run["steps_completed"] == 12
    notes = run["script_notes"]
    assert (notes["backend_asked"], notes["backend_given"]) == ("mpi", "gloo")
    assert run["link_probe"]  # measured before the script's own destroy_process_group()
