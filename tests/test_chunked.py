"""Big traces decoded in pieces give the same analysis as decoding them whole, and a file that cannot be cut
safely is streamed instead."""

import dataclasses
import gzip
import json

import pytest

from commprof.trace import chunked
from commprof.trace.chunked import LayoutNotUnderstood, decode_in_chunks
from commprof.trace.classify import classify
from commprof.trace.parse import parse_trace
from tests.conftest import LARGE_TRACE, TRACES, decoded_whole, needs_large_trace

FILES = sorted(p for p in TRACES.rglob("*.json*") if "nccl-trace-diff" not in str(p))


def same_analysis(path, decoded):
    whole, pieces = decoded_whole(path), classify(path, decoded)
    for field in dataclasses.fields(whole):
        assert getattr(pieces, field.name) == getattr(whole, field.name), field.name


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(TRACES)) for p in FILES])
def test_pieces_equal_decoded(path, monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK_BYTES", 20_000)  # many cuts, even in the small real traces
    same_analysis(path, decode_in_chunks(path, workers=1))


@pytest.mark.slow
def test_pieces_in_worker_processes_equal_decoded(monkeypatch):
    """Two worker processes, as `commprof analyze` uses on a big trace: a real GPU trace in 100 KB pieces."""
    monkeypatch.setattr(chunked, "CHUNK_BYTES", 100_000)
    path = TRACES / "nccl-a100-rank0-of-16" / "rank0.json.gz"
    same_analysis(path, decode_in_chunks(path, workers=2))


@pytest.mark.slow
@needs_large_trace
def test_pieces_in_worker_processes_equal_decoded_on_the_large_trace(monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK_BYTES", 4 << 20)
    (path,) = LARGE_TRACE.glob("*.json*")
    same_analysis(path, decode_in_chunks(path, workers=2))


def events(n: int) -> list[dict]:
    return [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"aten::op{i}",
            "pid": 1,
            "tid": 1,
            "ts": 10 * i,
            "dur": 5,
            "args": {"External id": i},
        }
        for i in range(n)
    ]


def test_header_fields_from_both_sides_of_the_array(tmp_path, monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK_BYTES", 300)
    text = json.dumps(
        {
            "schemaVersion": 1,
            "distributedInfo": {"rank": 3, "world_size": 4},
            "traceEvents": events(40),
            "traceName": "x]y",
            "baseTimeNanoseconds": 17,
        },
        indent=1,
    )
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    trace = decode_in_chunks(path, workers=1)
    assert [e.name for e in trace.traceEvents] == [f"aten::op{i}" for i in range(40)]  # a CPU trace keeps every op
    assert (trace.distributedInfo, trace.baseTimeNanoseconds) == ({"rank": 3, "world_size": 4}, 17)


def test_a_cut_inside_an_event_is_noticed_and_the_file_streamed(tmp_path, monkeypatch):
    """An args list of objects holds the characters of an event boundary: a cut there must not pass."""
    monkeypatch.setattr(chunked, "CHUNK_BYTES", 200)
    tricky = events(3)
    tricky[1]["args"] = {"inputs": [{"a": 1}] + [{"b": i} for i in range(200)]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": tricky}))
    with pytest.raises(LayoutNotUnderstood):
        decode_in_chunks(path, workers=1)
    monkeypatch.setattr("commprof.trace.parse.STREAM_ABOVE_BYTES", 100)
    monkeypatch.setattr(chunked, "MAX_WORKERS", 1)
    assert [e.name for e in parse_trace(path).traceEvents] == ["aten::op0", "aten::op1", "aten::op2"]


@pytest.mark.parametrize(
    "text", ['{"hello": 1}', '{"traceEvents": [{"ph": "X", "name": "a"}], "x": [1, 2', "not json at all"]
)
def test_files_it_cannot_cut(tmp_path, text):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(LayoutNotUnderstood):
        decode_in_chunks(path, workers=1)
