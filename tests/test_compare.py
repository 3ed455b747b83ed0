"""commprof compare: one run per backend; a backend that cannot run gets a row that says why."""

import json
import re

import pytest

from commprof.launch.mpi import mpi_unavailable
from tests.conftest import FAST_RUN, commprof_here

pytestmark = pytest.mark.slow
# FAST_RUN leaves one unprofiled step: no interval, so no winner; longer runs get one only with a real interval
CLAIM = re.compile(r" wins: .*x faster than .*95% CI|No significant difference|too few unprofiled steps")


@pytest.mark.takes(40, "two interleaved launches on each backend that runs here (gloo, mpi)")
def test_backends_side_by_side(tmp_path):
    args = ("--backends", "gloo,nccl,mpi", "--run-id", "cmp", "--json", "--repeats", "2", *FAST_RUN)
    result = commprof_here("compare", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {r["backend"]: r for r in data["rows"]}
    assert rows["gloo"]["available"] and rows["gloo"]["step_ms"] > 0 and rows["gloo"]["busbw_by_size"]
    assert not rows["nccl"]["available"] and "NCCL has no CPU transport" in rows["nccl"]["reason"]
    if mpi_unavailable() is None:  # MPI through mpi4py trains for real: the same workload, a winner and a ratio
        assert rows["mpi"]["available"] and rows["mpi"]["busbw_by_size"], rows["mpi"]["reason"]
        assert CLAIM.search(data["summary"]), data["summary"]
    else:
        assert not rows["mpi"]["available"] and "mpi" in rows["mpi"]["reason"].lower()
    folder = tmp_path / "reports" / "cmp"
    assert (folder / "gloo" / "report.html").exists() and (folder / "compare.png").stat().st_size > 1000
    assert (tmp_path / "traces" / "cmp-gloo-r2" / "run.json").exists()  # the second interleaved launch
    assert len(rows["gloo"]["launch_ms"]) in (0, 2)  # FAST_RUN may leave no unprofiled step to take a median of
    page = (folder / "report.html").read_text()
    assert "data:image/png;base64," in page and "<script" not in page and "not run:" in page


def test_unknown_strategy_is_one_line(tmp_path):
    result = commprof_here("compare", "--strategies", "ddp,zero3", "--quiet", *FAST_RUN, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.strip() == "error: unknown strategy: zero3 (ddp, fsdp)"
