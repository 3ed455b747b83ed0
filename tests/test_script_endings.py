"""The differential check's sample (benchmarks/check/differential.py, whose whole table is in docs/reliability.md):
the same script under plain torchrun and under `commprof run --`, each rank's end compared: its exit status, its
output lines, its steps. A final checkpoint on rank 0 longer than --timeout (commprof's link probe once rode the
script's group and killed such a job), and uneven inputs (commprof's exit-time collective once aborted the rank
that finished)."""

import pytest

from benchmarks.check.differential import SCRIPTS, Case, Ending, RankEnd, compare, differences

ENDINGS = str(SCRIPTS / "endings.py")


@pytest.mark.slow
@pytest.mark.takes(50, "the script under torchrun and under commprof, each saving for 6 s past --timeout 3")
def test_a_final_checkpoint_longer_than_the_timeout_ends_as_under_torchrun(tmp_path):
    case = Case("final-save", (ENDINGS, "final-save", "--save", "6"), "rank 0 saves 6 s", ("--timeout", "3"))
    compared = compare(case, tmp_path)
    assert compared.found == [], compared.verdict
    assert compared.profiled.exit_code == 0
    assert {r: (e.status, e.steps) for r, e in compared.profiled.ranks.items()} == {0: ("0", 40), 1: ("0", 40)}
    assert compared.profiled.ranks[0].lines[-1] == "rank 0 done"


@pytest.mark.slow
@pytest.mark.takes(32, "the script under torchrun and under commprof, a rank waiting for the other's end each time")
def test_uneven_inputs_end_as_under_torchrun(tmp_path):
    case = Case("uneven", (ENDINGS, "uneven", "--at", "25"), "rank 1 has 25 batches")
    compared = compare(case, tmp_path)
    assert compared.found == [], compared.verdict
    assert compared.profiled.ranks[1] == RankEnd("0", 25, (*(f"rank 1 step {n}" for n in range(1, 26)), "rank 1 done"))
    assert compared.profiled.ranks[0].status == "exit 1" and compared.profiled.ranks[0].peer_gone


def test_what_counts_as_a_difference():
    """Hand-made ends: a rank stopped by its launcher and one whose collective failed on the peer's closed
    connection are one class (which comes first is a race under either launcher); any other change of status,
    steps or lines differs."""
    ok = RankEnd("0", 40, ("rank 0 step 40",))
    plain = Ending(1, 5.0, {0: RankEnd("SIGTERM", 6, ()), 1: RankEnd("exit 3", 6, ())})
    assert differences(plain, Ending(1, 6.0, {0: RankEnd("exit 1", 6, (), True), 1: RankEnd("exit 3", 6, ())})) == []
    assert differences(plain, Ending(1, 6.0, {0: RankEnd("exit 1", 6, ()), 1: RankEnd("exit 1", 6, ())})) == [
        "rank 0's end: ended by a peer's end against exit 1",
        "rank 1's end: exit 3 against exit 1",
    ]
    assert differences(Ending(0, 1.0, {0: ok}), Ending(1, 1.0, {0: ok})) == [
        "the launcher's exit code: 0 under torchrun, 1 under commprof"
    ]
    assert differences(Ending(0, 1.0, {0: ok}), Ending(0, 1.0, {0: RankEnd("0", 39, ok.lines)})) == [
        "rank 0's steps: 40 against 39"
    ]
