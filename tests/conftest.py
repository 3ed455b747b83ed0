import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO.parent / "shared" / "traces"
FAST_RUN = ["--steps", "8", "--schedule", "2,1,4", "--batch-size", "8"]


def commprof(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the installed CLI as a user would, in its own process."""
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "commprof", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="session")
def cpu_run(tmp_path_factory):
    """One real 2-rank Gloo run through the CLI, shared by the tests that inspect its output."""
    cwd = tmp_path_factory.mktemp("run")
    result = commprof("run", *FAST_RUN, "--run-id", "e2e", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return cwd, result


def load_json(path: Path):
    return json.loads(path.read_text())
