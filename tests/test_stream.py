"""Streaming the events of a big trace gives the same analysis as decoding it whole."""

import dataclasses

import pytest

from commprof.trace.classify import classify
from commprof.trace.parse import parse_trace
from commprof.trace.stream import stream_trace, uncompressed_size
from commprof.errors import TraceError
from conftest import SHARED_TRACES

TRACES = sorted(p for p in SHARED_TRACES.rglob("*.json*") if "nccl-trace-diff" not in str(p))


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(SHARED_TRACES)) for p in TRACES])
def test_streamed_equals_decoded(path):
    whole, streamed = classify(path, parse_trace(path)), classify(path, stream_trace(path))
    for field in dataclasses.fields(whole):
        assert getattr(streamed, field.name) == getattr(whole, field.name), field.name


def test_gzip_size_from_its_trailer(tmp_path):
    import gzip

    data = b'{"traceEvents": []}' * 1000
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(data))
    assert uncompressed_size(tmp_path / "t.json.gz") == len(data)


@pytest.mark.parametrize("text, problem", [
    ('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "na', "truncated JSON"),
    ('{"hello": 1}', "JSON without 'traceEvents'"),
    ("not json at all", "not valid JSON"),
])
def test_bad_big_traces(tmp_path, text, problem):
    path = tmp_path / "big.json"
    path.write_text(text)
    with pytest.raises(TraceError, match=problem):
        stream_trace(path)
