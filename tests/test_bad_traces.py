import gzip

import pytest

from commprof.errors import TraceError, UsageError
from commprof.trace.load import load_run
from tests.tracebuilder import TraceBuilder

GOOD = TraceBuilder(rank=0).step(1, 0, 10).x("aten::mm", 0, 5)


@pytest.mark.parametrize(
    "content, problem",
    [
        (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1', "truncated JSON"),
        (b"", "the file is empty"),
        (b"hello, not json", "not valid JSON"),
        (b'{"schemaVersion": 1}', "without 'traceEvents'"),
        (b"\x1f\x8b\x08\x00broken", "broken gzip"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 5, "dur": -3}]}', "negative duration"),
        (b'{"traceEvents": [{"ph": "X", "name": "a", "dur": 3}]}', "has no 'ts'"),
        (b'{"traceEvents": [{"ph": "X", "name": 17, "ts": 1}]}', "not a profiler trace"),
    ],
)
def test_one_bad_file_is_one_clear_error(tmp_path, content, problem):
    path = tmp_path / "rank0.json"
    path.write_bytes(content)
    with pytest.raises(TraceError, match=problem) as info:
        load_run([path], workers=1)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_good_ranks_are_analysed_and_bad_ones_listed(tmp_path):
    GOOD.write(tmp_path / "rank0.json")
    (tmp_path / "rank1.json").write_bytes(gzip.compress(b'{"traceEvents": [')[:-4])
    run = load_run([tmp_path], workers=1)
    assert [r.rank for r in run.ranks] == [0]
    assert len(run.skipped) == 1 and run.skipped[0].path.endswith("rank1.json")


def test_folder_without_traces(tmp_path):
    with pytest.raises(UsageError, match="no trace files"):
        load_run([tmp_path], workers=1)


def test_two_runs_mixed(tmp_path):
    TraceBuilder(rank=0, world_size=2).x("a", 0, 1).write(tmp_path / "a.json")
    TraceBuilder(rank=1, world_size=8).x("a", 0, 1).write(tmp_path / "b.json")
    with pytest.raises(UsageError, match="different runs mixed"):
        load_run([tmp_path], workers=1)


def test_missing_ranks_are_named(tmp_path):
    from commprof.analysis.analyze import analyze

    for rank in (0, 2):
        TraceBuilder(rank=rank, world_size=4).step(1, 0, 10).x("aten::mm", 0, 5).write(tmp_path / f"r{rank}.json")
    report = analyze(load_run([tmp_path], workers=1), "m", "analysis")
    assert report.missing_ranks == [1, 3]
    # the ranks compared are the two present (their words: tests/test_render_notes.py)
    assert report.cross_rank is not None and [r.rank for r in report.cross_rank.ranks] == [0, 2]


def test_the_same_file_twice_and_two_files_for_one_rank_are_told_apart(tmp_path):
    path = GOOD.write(tmp_path / "rank0.json")
    with pytest.raises(UsageError, match=r"^the same file given twice: .*rank0.json"):
        load_run([tmp_path, path], workers=1)
    (tmp_path / "other").mkdir()
    GOOD.write(tmp_path / "other" / "copy.json")
    with pytest.raises(UsageError, match=r"^two files claim rank 0: .*rank0.json, .*copy.json"):
        load_run([path, tmp_path / "other" / "copy.json"], workers=1)
