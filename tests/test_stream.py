"""Streaming the events of a big trace gives the same analysis as decoding it whole."""

import dataclasses

import pytest

from commprof.errors import TraceError
from commprof.trace.classify import classify
from commprof.trace.stream import stream_trace, uncompressed_size
from tests.conftest import LARGE_TRACE, TRACES, decoded_whole, needs_large_trace

FILES = sorted(p for p in TRACES.rglob("*.json*") if "nccl-trace-diff" not in str(p))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(TRACES)) for p in FILES])
def test_streamed_equals_decoded(path):
    whole, streamed = decoded_whole(path), classify(path, stream_trace(path))
    for field in dataclasses.fields(whole):
        assert getattr(streamed, field.name) == getattr(whole, field.name), field.name


@needs_large_trace
def test_streamed_equals_decoded_on_the_large_trace():
    (path,) = LARGE_TRACE.glob("*.json*")
    test_streamed_equals_decoded(path)


def test_gzip_size_from_its_trailer(tmp_path):
    import gzip

    data = b'{"traceEvents": []}' * 1000
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(data))
    assert uncompressed_size(tmp_path / "t.json.gz") == len(data)


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "na', "truncated JSON"),
        ('{"hello": 1}', "JSON without 'traceEvents'"),
        ("not json at all", "not valid JSON"),
    ],
)
def test_bad_big_traces(tmp_path, text, problem):
    path = tmp_path / "big.json"
    path.write_text(text)
    with pytest.raises(TraceError, match=problem):
        stream_trace(path)
