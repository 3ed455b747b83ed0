"""A script's ranks get the environment torchrun would give them: OMP_NUM_THREADS=1 when several share a node,
with torchrun's own warning, unless the user set it."""

import logging
import socket

import pytest

from commprof.launch.job import TORCHRUN_OMP_WARNING, torchrun_environment
from tests.conftest import REPO, commprof

SCRIPT = REPO / "tests" / "data" / "scripts" / "report_threads.py"


def test_torchrun_sets_one_thread_for_several_ranks_and_keeps_the_users():
    assert torchrun_environment(2, {}) == {"OMP_NUM_THREADS": "1"}
    assert torchrun_environment(1, {}) == {}  # one rank per node: torchrun leaves it
    assert torchrun_environment(4, {"OMP_NUM_THREADS": "3"}) == {}  # the user's own wins


def test_the_warning_is_the_one_torchrun_logs(monkeypatch):
    """torch's own launcher (torch.distributed.run), asked for two ranks on a node without OMP_NUM_THREADS, logs the
    warning commprof repeats, word for word (its leading blank line aside)."""
    from torch.distributed.run import config_from_args, get_args_parser

    monkeypatch.setenv("OMP_NUM_THREADS", "4")  # restored after the test: torchrun sets it
    monkeypatch.delenv("OMP_NUM_THREADS")
    logged: list[str] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record.getMessage())

    handler = Kept()
    logger = logging.getLogger("torch.distributed.run")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        config_from_args(get_args_parser().parse_args(["--nproc-per-node", "2", "train.py"]))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert [message.strip("\n") for message in logged] == [TORCHRUN_OMP_WARNING]


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
