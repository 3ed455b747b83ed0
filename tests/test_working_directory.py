"""Ranks never import from the working directory (issue 53): run from a folder that holds `commprof/` (the parent of a
clone installed with `pip install -e`), `torch/` and files named like standard modules, commprof's own run and a
user's script run as from anywhere else. Before, every run there failed: "rank 0 on vm failed: AttributeError:
module 'commprof' has no attribute '__version__'", the ranks forked from a fork server that Python starts with the
working directory first on its path."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FAST_RUN, REPO

pytestmark = pytest.mark.slow
COMMPROF = Path(sys.executable).parent / "commprof"  # the installed command: `python -m` itself puts "" first
SHADOWS = ("commprof/__init__.py", "torch/__init__.py", "random.py", "profile.py")


def hazardous_folder(tmp_path: Path) -> Path:
    for name in SHADOWS:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"raise ImportError('imported from the working directory: {name}')\n")
    return tmp_path


@pytest.mark.skipif(not COMMPROF.exists(), reason="the commprof command is not installed beside this interpreter")
def test_a_run_from_a_folder_holding_commprof_and_torch_works_as_from_anywhere(tmp_path):
    folder = hazardous_folder(tmp_path)
    for args in (
        ["run", "--run-id", "own", "--quiet", *FAST_RUN],
        ["run", "--run-id", "script", "--quiet", "--max-steps", "8", "--schedule", "2,1,4", "--"]
        + [str(REPO / "tests" / "data" / "scripts" / "train_default_ddp.py"), "--epochs", "1"],
    ):
        done = subprocess.run([str(COMMPROF), *args], cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "imported from the working directory" not in done.stdout + done.stderr
        assert (folder / "reports" / args[2] / "report.json").exists()  # written where the user ran it
