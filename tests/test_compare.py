"""commprof compare: one run per backend; a backend that cannot run gets a row that says why."""

import json

import pytest

from commprof.launch.mpi import mpi_unavailable
from tests.conftest import FAST_RUN, commprof

pytestmark = pytest.mark.slow


def test_backends_side_by_side(tmp_path):
    result = commprof("compare", "--backends", "gloo,nccl,mpi", "--run-id", "cmp", "--json", *FAST_RUN, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {r["backend"]: r for r in data["rows"]}
    assert rows["gloo"]["available"] and rows["gloo"]["step_ms"] > 0 and rows["gloo"]["busbw_by_size"]
    assert not rows["nccl"]["available"] and "CUDA" in rows["nccl"]["reason"]
    if mpi_unavailable() is None:  # MPI through mpi4py trains for real: the same workload, a winner and a ratio
        assert rows["mpi"]["available"] and rows["mpi"]["busbw_by_size"], rows["mpi"]["reason"]
        assert " wins: " in data["summary"] and "x faster than" in data["summary"]
    else:
        assert not rows["mpi"]["available"] and "mpi" in rows["mpi"]["reason"].lower()
    folder = tmp_path / "reports" / "cmp"
    assert (folder / "gloo" / "report.html").exists() and (folder / "compare.png").stat().st_size > 1000
    page = (folder / "report.html").read_text()
    assert "data:image/png;base64," in page and "<script" not in page and "not run:" in page
