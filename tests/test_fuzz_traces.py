"""Mutated real traces never crash the loader: a report, or a CommprofError naming the file."""

import gzip
import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from commprof.analysis.analyze import analyze
from commprof.errors import CommprofError
from commprof.trace.load import load_run
from tests.conftest import TRACES

SOURCE = TRACES / "missing-fields" / "rank_non_gpu.json.gz"
RAW = gzip.decompress(SOURCE.read_bytes())
EVENTS = json.loads(RAW)["traceEvents"]
VALUES = st.one_of(
    st.none(),
    st.integers(-(10**6), 10**12),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
FIELDS = ["ph", "name", "cat", "pid", "tid", "ts", "dur", "args"]


def _mutate_events(data, edits):
    events = [dict(e) for e in EVENTS]
    for index, field, value, delete in edits:
        event = events[index % len(events)]
        if delete:
            event.pop(field, None)
        else:
            event[field] = value
    return json.dumps({"distributedInfo": {"rank": 0}, "traceEvents": events}).encode()


def _check(tmp_path, content: bytes) -> None:
    path = tmp_path / "rank0.json"
    path.write_bytes(content)
    try:
        analyze(load_run([path], workers=1), "fuzz", "analysis")
    except CommprofError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(FIELDS), VALUES, st.booleans()), min_size=1, max_size=8)
)
def test_field_mutations(tmp_path, edits):
    _check(tmp_path, _mutate_events(EVENTS, edits))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, len(RAW)), st.binary(max_size=4))
@example(cut=10441, garbage=b'\x80"')  # once a UnicodeDecodeError out of msgspec, not a one-line error
def test_truncation_and_garbage(tmp_path, cut, garbage):
    _check(tmp_path, RAW[:cut] + garbage)
