"""A desync the backend let pass, found by comparing the ranks' whole-run collectives (results/sequences.py)."""

from commprof.launch.hang_evidence import where_they_part
from commprof.launch.script_run import desync
from commprof.results.failure_facts import Parting, Side
from commprof.results.hang import EnteredCollective
from commprof.results.run_record import RunRecord, ScriptRankInfo
from commprof.results.sequences import first_parting, sequences_of
from tests.conftest import run_record


def dump(first: int, last: int, odd: dict[int, tuple[str, int, str]] | None = None) -> dict:
    """A Flight Recorder dump as torch's `_dump_fr_trace(True, False, False)` gives it, read back: all_reduces of 4
    Float with sequence numbers first..last, but those in `odd` (seq: op, elements, dtype)."""
    entries = []
    for seq in range(first, last + 1):
        op, numel, dtype = (odd or {}).get(seq, ("all_reduce", 4, "Float"))
        entries.append(
            {
                "collective_seq_id": seq,
                "profiling_name": f"gloo:{op}",
                "input_sizes": [[numel]],
                "input_dtypes": [dtype],
                "process_group": ("0", "default_pg"),
                "frames": [],
            }
        )
    return {"entries": entries, "pg_status": {"0": {"last_completed_collective": last}}}


def call(seq: int, dtype: str = "Float", op: str = "all_reduce") -> EnteredCollective:
    """A call of `dump`'s as the comparison reads it back: completed, 4 elements, no time, no line."""
    return EnteredCollective("0", "default_pg", seq, op, [[4]], [dtype], True, 0.0, None)


def test_the_first_position_where_the_calls_differ_in_the_overlap_of_two_buffers():
    """Rank 0's buffer holds 1-10, rank 1's 3-12 (a ring buffer keeps the last ones); they differ at 7 (dtype) and
    9 (op): the first is named, without lines (the dump kept none)."""
    ranks = {
        0: sequences_of(dump(1, 10, {9: ("broadcast", 4, "Float")})),
        1: sequences_of(dump(3, 12, {7: ("all_reduce", 4, "Int")})),
    }
    (group,) = ranks[0]
    assert (group.first_seq, len(group.calls), len(group.distinct)) == (1, 10, 2)  # the distinct calls once
    assert where_they_part(first_parting(ranks), lines_known=False) == Parting(
        seq=7, first=Side((0,), call(7)), second=Side((1,), call(7, "Int")), mismatch="dtype", lines_known=False
    )


def test_ranks_that_agree_or_do_not_overlap_part_nowhere():
    assert first_parting({0: sequences_of(dump(1, 10)), 1: sequences_of(dump(1, 10))}) == {}
    assert (
        first_parting({0: sequences_of(dump(1, 5)), 1: sequences_of(dump(6, 10, {7: ("broadcast", 4, "Float")}))}) == {}
    )
    gap = dump(1, 10)
    del gap["entries"][4]  # a buffer with a hole in its sequence: not compared
    assert sequences_of(gap) == []


def test_the_run_record_notes_a_silent_desync():
    infos = {
        0: ScriptRankInfo(collectives=sequences_of(dump(1, 6))),
        1: ScriptRankInfo(collectives=sequences_of(dump(1, 6, {4: ("all_reduce", 4, "Int")}))),
    }
    assert desync(infos) == Parting(4, Side((0,), call(4)), Side((1,), call(4, "Int")), "dtype", lines_known=False)
    assert desync({0: infos[0], 1: ScriptRankInfo(collectives=sequences_of(dump(1, 6)))}) is None  # they agree
    parted = desync(infos)
    kept = RunRecord.from_json(run_record(desync=parted).to_json())  # run.json keeps it, and report.json's "run"
    assert kept.desync == parted and kept.summary().desync == parted
    roundtrip = ScriptRankInfo.from_dict(infos[1].to_dict())
    assert roundtrip == infos[1]


def test_a_rooted_collective_whose_root_alone_holds_the_list_parts_nowhere():
    """distribute_tensor's scatter (issue 70): the source rank passes the list, the others none; a gather's root
    likewise. Two ranks that both hold tensors of different shapes still part there."""
    scatter = {3: ("scatter", 65536, "Float")}
    root, other = dump(1, 6, scatter), dump(1, 6, scatter)
    other["entries"][2]["input_sizes"] = []  # the non-root rank's side of the scatter: no list
    assert first_parting({0: sequences_of(root), 1: sequences_of(other)}) == {}
    both = dump(1, 6, {3: ("scatter", 512, "Float")})
    parted = first_parting({0: sequences_of(root), 1: sequences_of(both)})
    assert sorted(parted) == [0, 1] and parted[1].collectives[0].sizes == [[512]]
    differs = dump(1, 6, {3: ("gather", 65536, "Float")})
    differs["entries"][2]["input_sizes"] = []
    assert sorted(first_parting({0: sequences_of(root), 1: sequences_of(differs)})) == [0, 1]  # another op
