"""commprof bench: real Gloo and MPI collectives with checked results, nccl-tests factors, alpha-beta fit."""

import json
import socket

import pytest
import torch

from commprof.analysis.bench import BenchRow, fit_alpha_beta, summarize
from commprof.errors import UsageError
from commprof.instrument.collectives import MATRIX_OPS, Comm
from commprof.launch.mpi import mpi_unavailable
from commprof.values import parse_size
from commprof.worker.bench import measure
from tests.conftest import commprof_here

OPS = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv"}


def test_alpha_beta_fit_recovers_a_known_model():
    # t = 20 us + size / (1 GB/s) exactly
    rows = [BenchRow("gloo", "all_reduce", s, "float32", 20 + s / 1e3, 0, 0, 0, 0, True) for s in (1e3, 1e4, 1e5, 1e6)]
    (fit,) = fit_alpha_beta(rows, world_size=4)
    assert fit.alpha_us == pytest.approx(20) and fit.bandwidth_gbps == pytest.approx(1.0)
    assert fit.busbw_gbps == pytest.approx(1.0 * 2 * 3 / 4) and fit.predict_us(2_000_000) == pytest.approx(2020)


def test_busbw_uses_nccl_tests_factors_and_marks_ddp_sizes():
    raw = [
        {"op": op, "bytes": 1 << 20, "dtype": "float32", "times_us": [1000.0, 1000.0, 1000.0], "correct": True}
        for op in ("all_reduce", "all_gather", "broadcast")
    ]
    rows = {r.op: r for r in summarize("gloo", 4, raw, buckets=[1_000_000])}
    assert rows["all_reduce"].algbw_gbps == pytest.approx((1 << 20) / 1e-3 / 1e9)
    assert rows["all_reduce"].busbw_gbps == pytest.approx(rows["all_reduce"].algbw_gbps * 1.5)
    assert rows["all_gather"].busbw_gbps == pytest.approx(rows["all_gather"].algbw_gbps * 0.75)
    assert rows["broadcast"].busbw_gbps == rows["broadcast"].algbw_gbps and rows["broadcast"].ddp_bucket


@pytest.mark.parametrize("text, value", [("1024", 1024), ("64K", 65536), ("16M", 16 << 20), ("1GB", 1 << 30)])
def test_sizes(text, value):
    assert parse_size("--min-bytes", text) == value


def test_bad_size():
    with pytest.raises(UsageError, match="positive size"):
        parse_size("--max-bytes", "lots")


@pytest.mark.slow
def test_every_op_runs_for_real_and_is_correct(tmp_path):
    """Gloo, and MPI where mpi4py and an MPI runtime are installed, in one bench; NCCL refused with its reason."""
    backends = ["gloo"] + (["mpi"] if mpi_unavailable() is None else [])
    result = commprof_here(
        "bench",
        "--backend",
        ",".join([*backends, "nccl"]),
        "--min-bytes",
        "1K",
        "--max-bytes",
        "64K",
        "--iters",
        "3",
        "--model",
        "mlp",
        "--run-id",  # bench's --name, under the name run, sweep and tune give it
        "b",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for backend in backends:
        rows = [r for r in data["rows"] if r["backend"] == backend]
        assert {r["op"] for r in rows} == OPS and all(r["correct"] for r in rows), backend
        assert sorted({r["bytes"] for r in rows if r["op"] == "all_reduce"}) == [1024, 4096, 16384, 65536]
    assert "NCCL has no CPU transport" in data["unavailable"]["nccl"]  # no GPU here: a reason, not a crash
    assert data["ddp_bucket_sizes"] == [29429800, 4198400]  # mlp-small's buckets at 25 MB
    # a run's findings on this host take their ceiling from it
    assert data["host"] == socket.gethostname() and data["hosts"] == [socket.gethostname()] * 2
    for name in ("report.json", "report.md", "report.html", "bench.csv", "busbw.png"):
        assert (tmp_path / "reports" / "b" / name).stat().st_size > 100
    shown = commprof_here("report", "b", "--format", "md", cwd=tmp_path)  # by its name, as every command takes a run
    assert shown.returncode == 0 and "| all_reduce |" in shown.stdout  # saved and shown like every result


class OneRankComm(Comm):
    """The real buffers and checks of one rank, with collectives that do nothing, except one op this backend
    refuses on this device (as Gloo refuses some ops on CUDA tensors)."""

    def __init__(self, refuses: str):
        self.backend, self.rank, self.size, self.refuses, self.calls = "fake", 0, 1, refuses, 0
        self.peer = None
        self.ops = {op: (lambda buffers, op=op: self.run(op, buffers)) for op in MATRIX_OPS}

    def run(self, op, buffers):
        if op == self.refuses:
            raise RuntimeError(f"ProcessGroupGloo::{op}: unsupported device type cuda\nException raised from ...")
        self.calls += 1

    def barrier(self):
        pass

    def all_gather_object(self, value):
        return [value]


def test_bursts_back_to_back_and_a_refused_op_keeps_the_others():
    comm = OneRankComm(refuses="reduce_scatter")
    plan = {
        "ops": ["all_reduce", "reduce_scatter", "broadcast"],
        "min_bytes": 1024,
        "max_bytes": 4096,
        "factor": 4,
        "dtype": "float32",
        "warmup": 2,
        "iters": 7,
        "bursts": 3,
    }
    rows, refused = measure(comm, plan, torch.device("cpu"))
    assert [(r["op"], r["bytes"]) for r in rows] == [
        ("all_reduce", 1024),
        ("all_reduce", 4096),
        ("broadcast", 1024),
        ("broadcast", 4096),
    ]
    assert all(len(r["times_us"]) == 3 and r["correct"] for r in rows)  # a time per burst; one rank: already right
    assert comm.calls == 4 * (1 + 2 + 3 * 7)  # per size: the checked call, the warm-up, three bursts of seven
    assert refused == {"reduce_scatter": "ProcessGroupGloo::reduce_scatter: unsupported device type cuda"}
