"""One backend table (commprof/backends.py): what it says is what the rest of commprof does."""

import pytest

from commprof.backends import BACKENDS, TABLE, by_name
from commprof.config import RunConfig
from commprof.errors import UsageError
from commprof.trace import rules


def test_the_trace_rules_know_each_backends_names_from_the_table():
    assert rules.comm_kernel_backend("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "nccl"
    assert rules.comm_kernel_backend("ncclAllReduceRingLLKernel_sum_f32") == "nccl"  # before NCCL 2.4
    assert rules.CPU_COMM_RANGE.match("gloo:all_reduce") and rules.CPU_COMM_RANGE.match("mpi:allreduce")
    assert not rules.CPU_COMM_RANGE.match("nccl:all_reduce")  # a launch range: NCCL moves data in its kernels
    assert all(rules.COLLECTIVE_LAUNCH.match(f"{b}:all_reduce") for b in BACKENDS)


def test_a_backend_runs_only_on_its_devices():
    assert [b.name for b in TABLE if "cpu" not in b.devices] == ["nccl"]
    with pytest.raises(UsageError, match="--backend nccl needs --device cuda \\(NCCL has no CPU transport\\)"):
        RunConfig(run_id="r", backend="nccl", device="cpu")
    with pytest.raises(UsageError, match="--strategy fsdp runs over gloo, nccl, not mpi"):
        RunConfig(run_id="r", backend="mpi", strategy="fsdp")
    assert RunConfig(run_id="r", backend="gloo", device="cuda").backend == "gloo"


def test_only_mpi_needs_its_own_launcher_and_no_backend_is_ruled_out_of_compression():
    assert [b.name for b in TABLE if b.launched_by == "mpirun"] == ["mpi"]
    # whether compression pays is measured (instrument/cast_probe, analysis/setting_findings), never a backend's rule
    assert not any(hasattr(b, "compresses_on_device") for b in TABLE)
    assert by_name("nccl").flight_recorder and not by_name("gloo").flight_recorder
