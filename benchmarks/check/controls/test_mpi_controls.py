"""A user's script started by mpirun (issue 71, item 3: the suite keeps commprof's own run under mpirun,
tests/test_mpi_training.py). On demand:

    python -m pytest benchmarks/check/controls/test_mpi_controls.py -p no:cacheprovider"""

import subprocess

import pytest

from commprof.launch.mpi import mpi_unavailable
from tests.conftest import REPO, built_of, load_json

pytestmark = pytest.mark.slow


@pytest.mark.slow
@pytest.mark.skipif(mpi_unavailable() is not None, reason=str(mpi_unavailable()))
def test_a_script_started_by_mpirun(tmp_path):
    """`mpirun -n 2 commprof run -- train.py args`: each MPI process is one rank of the user's script."""
    from commprof.launch.mpi import mpi_command

    script = REPO / "tests" / "data" / "scripts" / "train_epochs.py"
    command, env = mpi_command(
        2,
        "commprof",
        ["run", "--run-id", "mpiscript", "--max-steps", "20", "--quiet", "--", str(script), "--epochs", "50"],
    )
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    run = load_json(tmp_path / "traces" / "mpiscript" / "run.json")
    assert run["status"] == "complete" and [len(r["step_ms"]) for r in run["ranks"]] == [20, 20]
    assert built_of(run, "ddp")[0]["module"] == "Sequential"
    assert len(run["link_probe"]) == 3, run["notes"]  # measured in commprof's own group, over its own store
    assert (tmp_path / "reports" / "mpiscript" / "report.json").is_file()
