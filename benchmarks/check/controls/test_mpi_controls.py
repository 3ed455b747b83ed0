"""A user's script started by mpirun, and a run longer than its --timeout that finishes (issue 71, item 3: the suite
keeps commprof's own run under mpirun and a stuck rank, tests/test_mpi_training.py). On demand:

    python -m pytest benchmarks/check/controls/test_mpi_controls.py -p no:cacheprovider"""

import subprocess

import pytest

from commprof.launch.mpi import mpi_unavailable
from tests.conftest import REPO, built_of, load_json
from tests.test_mpi_training import faulty_mpi_run

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


@pytest.mark.slow
@pytest.mark.skipif(mpi_unavailable() is not None, reason=str(mpi_unavailable()))
def test_an_mpi_run_longer_than_its_timeout_finishes(tmp_path):
    """--timeout bounds a wait in a collective, not the job: every step lasts half a second (the model sleeps), so
    20 steps train for 10 s, twice --timeout 5 (mpirun had been stopped at 5 s)."""
    result, _ = faulty_mpi_run(tmp_path, "long", 5, 20, step_sleep="0.5")
    assert result.returncode == 0, result.stderr
    run = load_json(tmp_path / "traces" / "long" / "run.json")
    assert run["status"] == "complete" and run["steps_completed"] == 20
    assert sum(run["ranks"][0]["step_ms"]) >= 10_000
