"""A script's ranks get the environment torchrun would give them: OMP_NUM_THREADS=1 when several share a node,
with torchrun's own warning, unless the user set it."""

import socket

import pytest

from commprof.launch.job import TORCHRUN_OMP_WARNING, torchrun_environment
from tests.conftest import REPO, commprof

SCRIPT = REPO / "tests" / "data" / "scripts" / "report_threads.py"


def test_torchrun_sets_one_thread_for_several_ranks_and_keeps_the_users():
    assert torchrun_environment(2, {}) == {"OMP_NUM_THREADS": "1"}
    assert torchrun_environment(1, {}) == {}  # one rank per node: torchrun leaves it
    assert torchrun_environment(4, {"OMP_NUM_THREADS": "3"}) == {}  # the user's own wins
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default" in TORCHRUN_OMP_WARNING


def rank_lines(tmp_path, run_id: str) -> str:
    logs = tmp_path / "traces" / run_id / "logs" / socket.gethostname()
    return "".join(path.read_text() for path in sorted(logs.rglob("*")) if path.is_file())


@pytest.mark.slow
def test_a_scripts_ranks_get_torchruns_environment(tmp_path, monkeypatch):
    """Two ranks on this node and no OMP_NUM_THREADS of the user's: each rank sees 1, with torchrun's warning (a
    user's own value is kept: the unit test above)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    result = commprof(
        "run", "--run-id", "t", "--max-steps", "6", "--schedule", "1,1,2", "--", str(SCRIPT), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    lines = rank_lines(tmp_path, "t")
    assert "rank 0: OMP_NUM_THREADS=1" in lines and "rank 1: OMP_NUM_THREADS=1" in lines
    assert TORCHRUN_OMP_WARNING in result.stderr
