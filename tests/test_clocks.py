"""Clock offsets between hosts: measured at start by round trips, stored in run.json, used to align ranks."""

import dataclasses
import json
import shutil
import socket
import time

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from commprof.commands.reporting import report_from_traces
from commprof.worker.clocks import measure_clock_offsets

SKEW_NS = 5_000_000  # host "b" runs 5 ms ahead


def _measure(rank: int, port: int, results) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    clock = time.time_ns if rank == 0 else (lambda: time.time_ns() + SKEW_NS)
    results[rank] = [dataclasses.asdict(o) for o in measure_clock_offsets(rank, "ab"[rank], clock_ns=clock)]
    dist.destroy_process_group()


@pytest.mark.slow
def test_round_trips_recover_an_injected_offset():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.Manager().dict()
    mp.spawn(_measure, args=(port, results), nprocs=2)
    a, b = results[0]
    assert (a["host"], a["offset_us"]) == ("a", 0.0)
    assert b["host"] == "b" and results[1] == []
    assert abs(b["offset_us"] - SKEW_NS / 1000) <= b["round_trip_us"] / 2 + 1, b


def test_analysis_aligns_ranks_with_the_measured_offsets(cpu_run, tmp_path):
    cwd, _ = cpu_run
    original = cwd / "traces" / "e2e"
    shifted = tmp_path / "e2e"
    shutil.copytree(original, shifted, ignore=shutil.ignore_patterns("logs"))
    # rank 1 becomes a second host whose clock is 7,345 us ahead
    trace = json.loads((shifted / "rank1.pt.trace.json").read_text())
    host0 = trace["host_name"]
    trace["host_name"] = "node-b"
    for event in trace["traceEvents"]:
        if "ts" in event:
            event["ts"] += 7345
    (shifted / "rank1.pt.trace.json").write_text(json.dumps(trace))
    run = json.loads((shifted / "run.json").read_text())
    run["clock_offsets"] = [
        {"host": host0, "offset_us": 0.0, "round_trip_us": 0.0},
        {"host": "node-b", "offset_us": 7345.0, "round_trip_us": 40.0},
    ]
    (shifted / "run.json").write_text(json.dumps(run))

    before, _ = report_from_traces([original], name="a", kind="run")
    after, _ = report_from_traces([shifted], name="b", kind="run")
    assert after.cross_rank.alignment.how == "measured"
    assert [r.clock_offset_us for r in after.cross_rank.ranks] == [0.0, -7345.0]
    for old, new in zip(before.cross_rank.ranks, after.cross_rank.ranks, strict=False):
        assert new.wait_ms == pytest.approx(old.wait_ms, abs=1e-6)
        assert new.transfer_ms == pytest.approx(old.transfer_ms, abs=1e-6)
    assert after.cross_rank.straggler == before.cross_rank.straggler


def test_run_json_records_the_measurement(cpu_run):
    cwd, _ = cpu_run
    run = json.loads((cwd / "traces" / "e2e" / "run.json").read_text())
    assert run["status"] == "complete"
    assert run["clock_offsets"] == [{"host": socket.gethostname(), "offset_us": 0.0, "round_trip_us": 0.0}]
