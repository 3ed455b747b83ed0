"""Horovod's timeline (HOROVOD_TIMELINE) read as the collectives it ran, fused groups once, and merged into rank 0's
trace, where the breakdown counts them as it counts torch's own Gloo collectives (issue 54). Hand-built: every time
below can be checked by eye. Horovod's format: one process per tensor; NEGOTIATE_ALLREDUCE with a mark per rank that
reported the tensor ready, then ALLREDUCE around its activities (GLOO_ALLREDUCE: the transfer, shared by the tensors
fused together); the op's end carries dtype and shape; times count from start_time_since_epoch_in_micros."""

import json

import pytest

from commprof.analysis.analyze import analyze
from commprof.trace.files import find_trace_files
from commprof.trace.horovod_timeline import read_timeline
from commprof.trace.load import load_run
from tests.tracebuilder import TraceBuilder

START_US = 1_000_000  # the timeline's start, since the epoch
BASE_NS = 999_000_000  # the profiler's baseTimeNanoseconds: its ts 0 is 999_000 us since the epoch, 1000 us earlier


def tensor(pid, name, shape, negotiate_at, transfer, ends_at, dtype="float32"):
    """One tensor's rows: negotiation from `negotiate_at` (both ranks ready), the op to `ends_at`, its transfer
    `transfer` (start, end) inside."""
    began, finished = transfer
    return [
        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}},
        {"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": negotiate_at, "pid": pid},
        {"ph": "X", "name": "0", "ts": negotiate_at, "pid": pid, "dur": 0},
        {"ph": "X", "name": "1", "ts": negotiate_at + 1, "pid": pid, "dur": 0},
        {"ph": "E", "ts": negotiate_at + 2, "pid": pid},
        {"ph": "B", "name": "ALLREDUCE", "ts": negotiate_at + 2, "pid": pid},
        {"ph": "B", "name": "GLOO_ALLREDUCE", "ts": began, "pid": pid},
        {"ph": "E", "ts": finished, "pid": pid},
        {"ph": "E", "ts": ends_at, "pid": pid, "args": {"dtype": dtype, "shape": shape}},
    ]


def timeline_events():
    head = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": START_US}}]
    # two tensors fused into one transfer [30, 71] (Horovod stamps each fused tensor's activities on its own, a
    # microsecond apart); a third alone [80, 90], after it (one transfer at a time)
    return [
        *head,
        *tensor(1, "allreduce.0.weight", "[64, 32]", 10, (30, 70), 72),
        *tensor(2, "allreduce.0.bias", "[64]", 12, (31, 71), 72),
        *tensor(3, "allreduce.2.weight", "[1, 64]", 75, (80, 90), 91),
    ]


def test_fused_tensors_are_one_transfer_with_their_elements(tmp_path):
    path = tmp_path / "horovod_timeline.json"
    path.write_text(json.dumps(timeline_events()))
    timeline = read_timeline(path)
    assert timeline.ranks == 2
    assert [(c.op, c.start_us, c.end_us, c.elements, c.dtype, c.tensors) for c in timeline.collectives] == [
        (
            "allreduce",
            START_US + 30,
            START_US + 71,
            64 * 32 + 64,
            "float32",
            ("allreduce.0.weight", "allreduce.0.bias"),
        ),
        ("allreduce", START_US + 80, START_US + 90, 64, "float32", ("allreduce.2.weight",)),
    ]


def test_a_timeline_cut_short_is_read_to_its_last_whole_event(tmp_path):
    """A job stopped before Horovod closed its timeline leaves the array open, its last event maybe cut."""
    text = json.dumps(timeline_events())[:-1]  # no closing bracket
    path = tmp_path / "horovod_timeline.json"
    path.write_text(text + ',\n{"ph": "B", "name": "NEGOTIATE_ALLRE')
    assert len(read_timeline(path).collectives) == 2


def test_rank_0s_trace_gets_the_transfers_and_the_breakdown_counts_them(tmp_path):
    """Rank 0's step [1000, 1100] in the timeline's clock (the profiler's ts 0 is 1000 us before the timeline's):
    compute [1000, 1040] and [1075, 1095]; the transfers [1030, 1071] (2112 floats) and [1080, 1090] (64 floats):
    comm 51 us, overlap [1030, 1040] + [1080, 1090] = 20 us, exposed 31 us. Rank 1's trace is left as it is."""
    (tmp_path / "horovod_timeline.json").write_text(json.dumps(timeline_events()))
    for rank in (0, 1):
        trace = TraceBuilder(rank=rank, base_ns=BASE_NS).step(1, 1000, 100).x("aten::mm", 1000, 40)
        trace.x("Optimizer.step#SGD.step", 1074, 22, cat="user_annotation").x("aten::add_", 1075, 20)
        trace.write(tmp_path / f"rank{rank}.pt.trace.json")
    assert [p.name for p in find_trace_files([tmp_path])] == ["rank0.pt.trace.json", "rank1.pt.trace.json"]
    report = analyze(load_run([tmp_path], workers=1), "h", "analysis")
    zero, one = report.ranks
    assert (zero.compute_ms, zero.comm_ms, zero.overlap_ms, zero.exposed_comm_ms) == pytest.approx(
        (0.060, 0.051, 0.020, 0.031)
    )
    assert one.comm_ms == 0
    sizes = sorted((c.op, c.backend, c.bytes, c.calls_per_step) for c in report.collectives)
    assert sizes == [("all_reduce", "gloo", 64 * 4, 1.0), ("all_reduce", "gloo", (64 * 32 + 64) * 4, 1.0)]


def test_a_script_is_a_horovod_job_when_it_imports_horovod(tmp_path):
    from commprof.launch.horovod import uses_horovod

    cases = {
        "plain.py": "import horovod.torch as hvd\nhvd.init()\n",
        "from.py": "from horovod import torch as hvd\n",
        "indented.py": "def main():\n    import horovod.torch as hvd\n",
        "ddp.py": "import torch.distributed as dist\n# horovod would do this differently\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    found = {name: uses_horovod((str(tmp_path / name),)) for name in cases}
    assert found == {"plain.py": True, "from.py": True, "indented.py": True, "ddp.py": False}
    assert not uses_horovod((str(tmp_path / "missing.py"),))


def test_a_horovod_script_is_refused_in_one_line_where_it_cannot_be_launched(tmp_path, monkeypatch):
    """Across hosts (run horovodrun itself), or where Horovod is not installed (the install script named)."""
    import builtins
    import dataclasses

    from commprof.config import RunConfig
    from commprof.errors import UsageError
    from commprof.launch.horovod import horovod_rendezvous

    script = tmp_path / "train.py"
    script.write_text("import horovod.torch as hvd\n")
    config = RunConfig(run_id="h", script=(str(script),))
    with pytest.raises(UsageError, match="on one host .* across hosts, run horovodrun itself"):
        with horovod_rendezvous(dataclasses.replace(config, nodes=2, rdzv_endpoint="h:29400")):
            pass
    real_import = builtins.__import__

    def no_horovod(name, *args, **kwargs):
        if name.startswith("horovod"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_horovod)
    with pytest.raises(
        UsageError, match="imports horovod, which is not installed here: bash benchmarks/install_horovod.sh"
    ):
        with horovod_rendezvous(config):
            pass


def test_a_transfer_is_ready_when_its_tensors_were_negotiated(tmp_path):
    """The fused pair's tensors were negotiated by 12 + 2 (the later of the two), the third's by 75 + 2."""
    path = tmp_path / "horovod_timeline.json"
    path.write_text(json.dumps(timeline_events()))
    assert [c.ready_us - START_US for c in read_timeline(path).collectives] == [14, 77]


def test_a_larger_threshold_merges_only_the_buffers_one_cycle_split():
    """Buffers ready together (one cycle's tensors, split by the threshold) merge in order up to the new threshold;
    a buffer of another cycle never does."""
    from commprof.analysis.horovod_findings import fused

    mib = 2**20
    one_cycle = [(mib, 0.5), (mib, 0.5), (mib, 0.5), (512 * 1024, 0.9)]
    assert fused(one_cycle, 2 * mib) == [(2 * mib, 0.5), (mib, 0.5), (512 * 1024, 0.9)]
    assert fused(one_cycle, 8 * mib) == [(3 * mib, 0.5), (512 * 1024, 0.9)]
    assert fused(one_cycle, mib) == one_cycle
