"""Horovod's timeline (HOROVOD_TIMELINE) read as the collectives it ran, fused groups once, and merged into rank 0's
trace, where the breakdown counts them as it counts torch's own Gloo collectives (issue 54). Hand-built: every time
below can be checked by eye. Horovod's format: one process per tensor; NEGOTIATE_ALLREDUCE with a mark per rank that
reported the tensor ready, then ALLREDUCE around its activities (GLOO_ALLREDUCE: the transfer, shared by the tensors
fused together); the op's end carries dtype and shape; times count from start_time_since_epoch_in_micros."""

import dataclasses
import gzip
import json
import zlib

import pytest

from commprof.analysis.analyze import analyze
from commprof.trace.files import find_trace_files
from commprof.trace.horovod_timeline import read_timeline
from commprof.trace.load import load_run
from commprof.trace.model import Collective, RankTrace, Step
from tests.tracebuilder import TraceBuilder

START_US = 1_000_000  # the timeline's start, since the epoch
MIB = 2**20
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


def test_a_compressed_copy_is_read_as_the_timeline_and_found_beside_the_traces(tmp_path):
    from commprof.trace.horovod_timeline import timeline_beside

    path = tmp_path / "horovod_timeline.json.gz"
    path.write_bytes(gzip.compress(json.dumps(timeline_events()).encode()))
    (tmp_path / "rank0.pt.trace.json").write_text("{}")
    assert timeline_beside(tmp_path / "rank0.pt.trace.json") == path
    assert [p.name for p in find_trace_files([tmp_path])] == ["rank0.pt.trace.json"]  # not read as a trace
    assert [c.elements for c in read_timeline(path).collectives] == [64 * 32 + 64, 64]
    text = json.dumps(timeline_events())
    path.write_bytes(gzip.compress(text.encode())[:-60])  # a copy cut short: read as far as it goes, as a file is
    kept = zlib.decompressobj(wbits=31).decompress(path.read_bytes()).decode()
    assert 0 < len(kept) < len(text)
    (tmp_path / "cut_horovod_timeline.json").write_text(kept)
    cut = read_timeline(tmp_path / "cut_horovod_timeline.json").collectives
    assert cut and read_timeline(path).collectives == cut


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
    loaded = load_run([tmp_path], workers=1)
    assert [(c.ready, c.step) for c in loaded.ranks[0].collectives] == [(1014, 0), (1077, 0)]  # the trace's clock
    report = analyze(loaded, "h", "analysis")
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


def call(start, end, ready, nbytes=MIB, step=0, group="horovod"):
    """One of Horovod's allreduces as rank 0's merged trace has it."""
    return Collective("all_reduce", "gloo", start, end, nbytes=nbytes, ready=ready, process_group=group, step=step)


def test_a_larger_threshold_folds_only_the_buffers_one_cycle_split():
    """Buffers ready together (one cycle's tensors, split by the threshold) merge in order up to the new threshold;
    a buffer of another cycle never does."""
    from commprof.analysis.horovod_findings import folded

    one_cycle = [call(0, 10, 5), call(10, 20, 5), call(20, 30, 5), call(40, 50, 35, nbytes=MIB // 2)]
    assert folded(one_cycle, 2 * MIB) == [one_cycle[1]]  # [1 + 1], [1], [0.5]
    assert folded(one_cycle, 8 * MIB) == one_cycle[1:3]  # [1 + 1 + 1], [0.5]
    assert folded(one_cycle, MIB) == []


def test_the_steps_are_replayed_with_the_calls_a_larger_buffer_folds():
    """Five training steps, each two 1 MiB calls of one cycle (the second folds into the first under 2 MiB), its first
    negotiation at 0, 10_000, 20_000, 50_000 and 62_000 us; the first and last steps are left out (Horovod's first
    negotiations; the last has no next step to end its time). Steps 1-3 take 10, 30 and 12 ms; their folded calls took
    1, 20 and 0.5 ms (on a link so fast that their bytes take no time). Advise measures medians: 12 ms a step now, the
    median of 9, 10 and 11.5 ms then: 2 ms saved (neither the savings' median, 1, nor their mean, 7.17)."""
    from commprof.analysis.horovod_findings import gain_ms, training_steps
    from commprof.analysis.predict import LinkModel

    def step(number, ready, folded_us):
        return [
            call(ready + 100, ready + 200, ready, step=number),
            call(ready + 200, ready + 200 + folded_us, ready, step=number),
        ]

    steps = [step(0, 0, 50), step(1, 10_000, 1000), step(2, 20_000, 20_000), step(3, 50_000, 500), step(4, 62_000, 50)]
    elsewhere = Collective("all_reduce", "gloo", 1000, 1100, nbytes=MIB, ready=0, process_group="other", step=1)
    rank = RankTrace("rank0", 0, 2, "gloo", "cpu", 0.0, (Step("ProfilerStep#9", 100_000, 110_000),), (), (), (), ())
    rank = dataclasses.replace(rank, collectives=(*(c for s in steps for c in s), elsewhere))
    replayed, outside = training_steps(rank)
    assert outside and [(s.calls, s.period_us) for s in replayed] == [
        (steps[1], 10_000),
        (steps[2], 30_000),
        (steps[3], 12_000),
    ]
    instant = LinkModel(0.0, 1e12, "given")
    assert gain_ms(replayed, 2 * MIB, instant, 2) == pytest.approx(2.0)
    assert gain_ms(replayed, MIB, instant, 2) == 0  # 1 MiB folds nothing
    profiled = dataclasses.replace(rank, steps=(Step("ProfilerStep#1", 20_000, 50_000),))
    assert [s.period_us for s in training_steps(profiled)[0]] == [10_000, 12_000]  # the profiled step is not replayed


def test_only_steps_of_every_gradient_once_are_replayed_and_a_buffer_holds_one_dtype():
    """Steps 1 and 3 allreduce the gradients (2 MiB); step 2, an evaluation loop's metric (8 bytes), is no training
    step and is not replayed. A float64 call in a float32 cycle is not folded into its buffer: Horovod fuses one
    dtype."""
    from commprof.analysis.horovod_findings import folded, training_steps

    def grads(number, ready):
        return [call(ready + 100, ready + 200, ready, step=number), call(ready + 200, ready + 300, ready, step=number)]

    metric = Collective("all_reduce", "gloo", 20_100, 20_200, nbytes=8, ready=20_000, process_group="horovod", step=2)
    calls = (*grads(0, 0), *grads(1, 10_000), metric, *grads(3, 30_000), *grads(4, 40_000))
    rank = RankTrace("rank0", 0, 2, "gloo", "cpu", 0.0, (), (), (), (), calls)
    assert [(s.number, s.period_us) for s in training_steps(rank)[0]] == [(1, 10_000), (3, 10_000)]
    first, second = grads(1, 10_000)
    wider = dataclasses.replace(second, dtype="float64")
    assert folded([dataclasses.replace(first, dtype="float32"), wider], 8 * MIB) == []


def test_a_folded_call_saves_what_it_took_beyond_its_bytes():
    """On a link of 1 GB/s with 100 us per ring step, 2 ranks, a 1 MiB call's bytes take 1048.576 us: a folded call of
    2000 us saves 951.424 us; one of 1000 us, faster than its bytes' time, saves nothing (a fold never costs time)."""
    from commprof.analysis.horovod_findings import saving_us
    from commprof.analysis.predict import LinkModel

    link = LinkModel(100.0, 1.0, "given")
    first = call(0, 500, 0)
    assert saving_us([first, call(500, 2500, 0)], 8 * MIB, link, 2) == pytest.approx(951.424)
    assert saving_us([first, call(500, 1500, 0)], 8 * MIB, link, 2) == 0


def test_the_transfers_of_one_cycle_share_its_negotiation(tmp_path):
    """Horovod negotiates, then runs every transfer it negotiated, one after another, and only then negotiates again.
    The timeline stamps each tensor's negotiation on its own: a threshold split one cycle's tensors into [20, 40] (ready
    at 10 + 2) and [45, 60] (ready at 13 + 2, before [20, 40] began: the same cycle, so ready at 12 too); the next
    cycle's tensor was negotiated by 64, after [45, 60] began, and keeps its own."""
    path = tmp_path / "horovod_timeline.json"
    head = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": START_US}}]
    events = [
        *head,
        *tensor(1, "allreduce.0.weight", "[64, 32]", 10, (20, 40), 41),
        *tensor(2, "allreduce.1.weight", "[64, 32]", 13, (45, 60), 61),
        *tensor(3, "allreduce.2.weight", "[64, 32]", 62, (70, 80), 81),
    ]
    path.write_text(json.dumps(events))
    assert [c.ready_us - START_US for c in read_timeline(path).collectives] == [12, 12, 64]


def test_a_metric_allreduced_every_step_keeps_the_steps_numbered(tmp_path):
    """A script that averages its loss with hvd.allreduce each step, before its gradients: the loss comes again at
    each step too, so the steps still begin where they do; an unnamed tensor (Horovod names it anew each call) never
    comes again and stays in its step."""
    path = tmp_path / "horovod_timeline.json"
    head = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": START_US}}]
    loss, weight = ("allreduce.loss", "[]"), ("allreduce.0.weight", "[64, 32]")
    events = [
        *head,
        *tensor(1, *loss, 10, (12, 14), 15),
        *tensor(2, *weight, 20, (22, 30), 31),
        *tensor(3, "allreduce.noname.1", "[]", 32, (34, 36), 37),
        *tensor(1, *loss, 40, (42, 44), 45),
        *tensor(2, *weight, 50, (52, 60), 61),
    ]
    path.write_text(json.dumps(events))
    assert [c.step for c in read_timeline(path).collectives] == [0, 0, 0, 1, 1]


def test_each_transfer_is_numbered_by_the_training_step_it_served(tmp_path):
    """Each gradient is allreduced once a step: a step ends where a tensor comes again. Steps of two tensors, the
    second step's fused into one transfer; the merged trace's collectives carry the number."""
    path = tmp_path / "horovod_timeline.json"
    head = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": START_US}}]
    weight, bias = ("allreduce.0.weight", "[64, 32]"), ("allreduce.0.bias", "[64]")
    events = [
        *head,
        *tensor(1, *weight, 10, (20, 30), 31),
        *tensor(2, *bias, 32, (40, 50), 51),
        *tensor(1, *weight, 60, (70, 80), 82),
        *tensor(2, *bias, 61, (71, 81), 82),
        *tensor(1, *weight, 90, (95, 99), 100),
    ]
    path.write_text(json.dumps(events))
    assert [(c.step, c.tensors) for c in read_timeline(path).collectives] == [
        (0, ("allreduce.0.weight",)),
        (0, ("allreduce.0.bias",)),
        (1, ("allreduce.0.weight", "allreduce.0.bias")),
        (2, ("allreduce.0.weight",)),
    ]
