"""CPU ranks of commprof's own workers fork from a fork server that imported torch once (launch/forkserver.py):
each launch's variables must still reach its ranks, also when the server started at an earlier launch."""

import multiprocessing
import os

import pytest

from commprof.config import RunConfig
from commprof.launch import forkserver

FRESH_START_METHOD = multiprocessing.get_all_start_methods()[0]  # the default of a process that set none


def told_variable(payload: dict, progress: str) -> dict:
    """A rank's answer, as its run id: the launch's variable and the start method its own processes would get."""
    return {"run_id": f"{os.environ['COMMPROF_TEST_VALUE']} {multiprocessing.get_start_method()}", "run_dir": "."}


def test_a_rank_gets_the_launch_folder_off_its_path_and_variables_then_runs_the_entry_point(monkeypatch, tmp_path):
    import sys

    monkeypatch.delenv("COMMPROF_TEST_VALUE", raising=False)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), *sys.path])  # the server's "" and the folder: both go
    monkeypatch.chdir(os.path.dirname(tmp_path))
    answer = forkserver.in_environment({"COMMPROF_TEST_VALUE": "here"}, str(tmp_path), told_variable, {}, "p")
    assert answer["run_id"] == f"here {FRESH_START_METHOD}"
    assert os.environ["COMMPROF_TEST_VALUE"] == "here"
    assert os.getcwd() == str(tmp_path) and "" not in sys.path and str(tmp_path) not in sys.path
    monkeypatch.delenv("COMMPROF_TEST_VALUE")


def test_cpu_ranks_fork_from_the_server_gpu_ranks_are_spawned():
    assert forkserver.start_method("cpu") == "forkserver"
    assert forkserver.start_method("cuda") == "spawn"


@pytest.mark.slow
def test_each_launch_in_one_process_gives_its_ranks_its_own_variables(tmp_path, monkeypatch):
    """The server starts at the first launch; what the second launch sets must reach the second's ranks. A rank's
    own processes (a DataLoader's workers) start as in a fresh process, not from a fork server of their own."""
    from commprof.launch.launcher import launch

    monkeypatch.delenv("COMMPROF_TEST_VALUE", raising=False)
    config = RunConfig(run_id="fork", traces_dir=tmp_path, timeout_s=60)
    told = [
        launch(config, told_variable, ({}, str(tmp_path / "p")), {"COMMPROF_TEST_VALUE": v})
        for v in ("first", "second")
    ]
    assert [result.run_id for result in told] == [f"first {FRESH_START_METHOD}", f"second {FRESH_START_METHOD}"]
    assert told[1].ranks_here == (0, 1)
