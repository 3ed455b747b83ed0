"""commprof backends: every cell tried for real with 2 ranks."""

import json

import pytest

from commprof.instrument.collectives import MATRIX_OPS
from commprof.launch.mpi import mpi_unavailable
from commprof.worker.matrix import combine, try_each
from tests.conftest import commprof_here


def test_a_refused_op_fails_with_its_reason_and_wrong_values_fail_too():
    def refuse():
        raise RuntimeError("Traceback...\nProcessGroupX does not support scatter")

    ops = {op: (lambda: True) for op in MATRIX_OPS} | {"scatter": refuse, "gather": lambda: False}
    cells = try_each(ops, sync=lambda: None)
    assert cells["scatter"] == [False, "ProcessGroupX does not support scatter"]
    assert cells["gather"] == [False, "wrong values received"] and cells["barrier"] == [True, ""]
    assert combine([cells, {op: [True, ""] for op in MATRIX_OPS}])["scatter"][0] is False


@pytest.mark.slow
def test_live_matrix(tmp_path):
    result = commprof_here("backends", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    gloo = data["matrix"]["gloo"]["cpu"]
    assert set(gloo) == set(MATRIX_OPS)
    for op in ("send_recv", "broadcast", "all_reduce", "all_gather", "gather", "scatter", "barrier"):
        assert gloo[op] == [True, ""], op  # what every Gloo build supports on CPU tensors
    assert data["not_available"]["nccl/cpu"] == "NCCL has no CPU transport"
    if mpi_unavailable() is None:
        assert all(cell[0] for cell in data["matrix"]["mpi"]["cpu"].values())
