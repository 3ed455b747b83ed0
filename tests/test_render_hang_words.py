"""A hang's facts in words (render/hang_words.py), and a rank Gloo aborted on a piece of another size
(render/failure_words.parted_text): the only tests that pin these sentences. Each builds the fact, directly or from
small hand-made evidence through launch/hang_evidence.describe_hang or launch/parted.parted_facts."""

import dataclasses
import signal

import pytest

from commprof.launch.faults import RankOutcome
from commprof.launch.hang_evidence import describe_hang, where_they_part
from commprof.launch.parted import Parted, parted_facts
from commprof.render.failure_words import failure_text, parted_text
from commprof.render.hang_words import diagnosis_text, hang_text, waiting_text
from commprof.render.notes_text import desync_text
from commprof.results.failure_facts import Behind, GlooParted, Killed, Overdue, Parting, Side
from commprof.results.hang import MPI_GROUP_DESC, EnteredCollective, HangEvidence, StackFrame

TRAIN = "/home/u/train.py"
TAKEN_S = 1_795_748_150.0  # when each account was written: 9 s after its collectives were entered
BACKWARD = "train.py:30 in main (loss.backward())"


def evidence(rank: int, steps: int | None, collectives: list[EnteredCollective], line: int, code: str) -> HangEvidence:
    """A rank's account: its own code's line, torch's below it, and the collectives it entered."""
    frames = [
        StackFrame(TRAIN, line, "main", code, True),
        StackFrame("/venv/site-packages/torch/_tensor.py", 600, "backward", "torch.autograd.backward(...)", False),
    ]
    return HangEvidence(rank, "node0", steps, TAKEN_S, 7.0, frames, collectives)


def dumped(rank: int, collectives: list[EnteredCollective], taken_s: float = TAKEN_S) -> HangEvidence:
    """A Flight Recorder dump's account: no stack, no steps; each collective with the line that called it."""
    return HangEvidence(rank, "", None, taken_s, 0.0, [], collectives)


def collective(
    seq: int, completed: bool, numel: int = 272, op: str = "all_reduce", dtype: str = "Float", line: int = 30
) -> EnteredCollective:
    site = StackFrame(TRAIN, line, "main", "loss.backward()" if line == 30 else f"line {line}", True)
    return EnteredCollective("0", "default_pg", seq, op, [[numel]], [dtype], completed, TAKEN_S - 9, site)


def logged(seq: int, elements: list[int], group: str = "0", desc: str = "default_pg") -> EnteredCollective:
    """A collective an NCCL watchdog line names: its element count alone (where logged), no dtype, no line."""
    return EnteredCollective(group, desc, seq, "all_reduce", [[n] for n in elements], [], False, 1.0, None)


# --- who is behind, and who waits in what

STUCK = evidence(1, 3, [collective(2, True), collective(3, True)], 27, "time.sleep(3600)")
WAITING = evidence(0, 3, [collective(2, True), collective(3, True), collective(4, False)], 30, "loss.backward()")
SLEEPING = "rank 1 is at train.py:27 in main (time.sleep(3600)), outside any collective, after step 3"
WAITED = f"rank 0 has waited 9 s in all_reduce #4 of the default group (1 tensor of 272 Float, 1.062 KiB) at {BACKWARD}"


def test_a_rank_outside_any_collective_is_named_before_the_one_that_waits_for_it():
    hang = describe_hang({0: WAITING, 1: STUCK})
    assert hang == Behind((STUCK,), (WAITING,), collective(4, False))
    assert hang_text(hang) == f"{SLEEPING}; {WAITED}"


def test_a_rank_behind_in_an_earlier_collective_is_named_with_it():
    earlier = evidence(1, 3, [collective(3, False)], 12, "dist.broadcast(t, 0)")
    ahead = evidence(0, 3, [collective(4, False)], 30, "loss.backward()")
    assert hang_text(describe_hang({0: ahead, 1: earlier})) == (
        "rank 1 is at train.py:12 in main (dist.broadcast(t, 0)), waiting in all_reduce #3 of the default group, "
        f"after step 3; {WAITED}"
    )


def test_ranks_that_all_wait_in_one_collective_point_beyond_this_node():
    ranks = tuple(evidence(r, 5, [collective(9, False)], 30, "loss.backward()") for r in (0, 1))
    assert hang_text(Behind((), ranks, collective(9, False))) == (
        f"ranks 0, 1 have waited 9 s in all_reduce #9 of the default group (1 tensor of 272 Float, 1.062 KiB) at "
        f"{BACKWARD}; no rank of this node is behind: a rank on another node, or the link to it, is"
    )


def test_without_a_flight_recorder_each_rank_is_placed_and_the_rest_counted():
    ranks = {0: evidence(0, 5, [], 30, "loss.backward()"), 1: evidence(1, 3, [], 27, "time.sleep(3600)")}
    assert hang_text(describe_hang(ranks)) == (
        f"{SLEEPING}; rank 0 is at train.py:30 in main (loss.backward()), outside any collective, after step 5"
    )
    four = tuple(evidence(r, 3, [], 27, "time.sleep(3600)") for r in range(4))
    assert hang_text(Behind(four, (), None)).endswith("after step 3 (and 1 more rank)")


def test_a_built_in_runs_rank_waits_in_commprofs_training_step():
    frames = [
        StackFrame("/x/commprof/worker/training.py", 61, "train_step", "loss.backward()", False),
        StackFrame("/venv/site-packages/torch/_tensor.py", 600, "backward", "torch.autograd.backward(...)", False),
    ]
    waiting = HangEvidence(0, "node0", 5, TAKEN_S, 7.0, frames, [collective(17, False)])
    stuck = evidence(1, 5, [collective(16, True)], 34, "time.sleep(3600)")
    assert hang_text(Behind((stuck,), (waiting,), collective(17, False))) == (
        "rank 1 is at train.py:34 in main (time.sleep(3600)), outside any collective, after step 5; rank 0 has waited "
        "9 s in all_reduce #17 of the default group (1 tensor of 272 Float, 1.062 KiB) in commprof's train_step "
        "(training.py:61)"
    )


def test_many_ranks_behind_are_counted_after_the_first_three():
    behind = tuple(evidence(r, 3, [collective(3, True)], 27, "time.sleep(3600)") for r in range(1, 6))
    waiting = evidence(0, 3, [collective(4, False)], 30, "loss.backward()")
    outside = ", outside any collective, after step 3"
    assert hang_text(Behind(behind, (waiting,), collective(4, False))) == (
        f"rank 1 is at train.py:27 in main (time.sleep(3600)){outside}; rank 2 is at train.py:27 in main "
        f"(time.sleep(3600)){outside}; rank 3 is at train.py:27 in main (time.sleep(3600)){outside} (and 2 more "
        f"ranks); {WAITED}"
    )


def test_a_wait_in_mpi_without_a_time_says_only_that_it_waits():
    """mpi4py's collectives (instrument/mpi_collectives.py) carry no time entered: the rank waits, for no known
    while."""
    mpi = EnteredCollective("COMM_WORLD", MPI_GROUP_DESC, 3, "allreduce", [[8]], ["Double"], False, 0.0, None)
    waiting = evidence(0, 2, [mpi], 30, "comm.allreduce(x)")
    assert hang_text(Behind((), (waiting,), mpi)) == (
        "rank 0 waits in allreduce #3 of MPI's COMM_WORLD (mpi4py) (1 tensor of 8 Double, 64 B) at train.py:30 in "
        "main (comm.allreduce(x)); no rank of this node is behind: a rank on another node, or the link to it, is"
    )


def test_where_one_rank_waits_or_last_was():
    assert waiting_text(WAITING) == WAITED
    assert waiting_text(STUCK) == (
        "rank 1's last collective was all_reduce #2 of the default group (1 tensor of 272 Float, 1.062 KiB) at "
        "train.py:27 in main (time.sleep(3600))"
    )
    assert waiting_text(evidence(2, 3, [], 27, "time.sleep(3600)")) is None  # it entered none


def test_the_deadlines_stop_names_the_hang_and_the_limit_it_passed():
    overdue = Overdue(Behind((STUCK,), (WAITING,), collective(4, False)), "vm", timeout_s=10, grace_s=15)
    assert failure_text(overdue) == (
        f"{SLEEPING}; {WAITED}; a collective waited over --timeout 10 s and 15 s of grace on vm (the script's process "
        "group would have waited longer): commprof stopped the job"
    )


# --- where the ranks' collectives part


def test_shapes_that_differ_at_the_same_call_are_named_with_its_line():
    rank0 = evidence(0, 3, [collective(9, True, 2, line=23), collective(10, False)], 34, "loss.backward()")
    rank1 = evidence(1, 3, [collective(8, True), collective(9, False, 3, line=23)], 23, "dist.all_reduce(t)")
    assert hang_text(describe_hang({0: rank0, 1: rank1})) == (
        "the ranks' collectives part at #9 of the default group: rank 0 ran all_reduce of 1 tensor of 2 Float, 8 B "
        "at train.py:23 in main (line 23) where rank 1 ran all_reduce of 1 tensor of 3 Float, 12 B at train.py:23 in "
        "main (line 23): the same collective with tensors of different shapes"
    )


@pytest.mark.parametrize(
    ("mine", "theirs", "said"),
    [
        (
            collective(9, False, 4),
            collective(9, False, 4, op="broadcast"),
            "different collectives at the same position",
        ),
        (collective(9, False, 4), collective(9, False, 4, dtype="Int"), "the same collective with different dtypes"),
        (
            collective(9, False, 1, line=15),
            collective(9, False, 272, line=34),
            "a collective that only some ranks run, met by another",
        ),
    ],
)
def test_an_op_a_dtype_and_a_collective_of_one_rank_alone_are_told_apart(mine, theirs, said):
    hang = describe_hang({0: evidence(0, 3, [mine], 30, "x"), 1: evidence(1, 3, [theirs], 30, "x")})
    assert hang_text(hang).endswith(f": {said}")


def test_a_desync_without_lines_and_with_no_error_from_the_backend():
    plain = dataclasses.replace(collective(7, True, 4), entered_s=0.0, site=None)
    ints = dataclasses.replace(plain, dtypes=["Int"])
    parting = where_they_part({0: dumped(0, [plain]), 1: dumped(1, [ints])}, lines_known=False)
    assert parting == Parting(7, Side((0,), plain), Side((1,), ints), "dtype", lines_known=False)
    parted = (
        "the ranks' collectives part at #7 of the default group: rank 0 ran all_reduce of 1 tensor of 4 Float, 16 B "
        "where rank 1 ran all_reduce of 1 tensor of 4 Int, 16 B: the same collective with different dtypes"
    )
    assert hang_text(parting) == parted
    assert desync_text(parting) == (
        f"{parted}; the backend raised no error: what that collective returned is not what the script meant"
    )


# --- `commprof diagnose`'s line: the hang, from how many ranks' evidence

LINE_30 = StackFrame(TRAIN, 30, "main", "", True)  # a dump's frame: the script's source is not here


def test_a_dumps_rank_outside_any_collective_is_named_with_its_last_one():
    last = dataclasses.replace(collective(8, True), site=LINE_30)
    ahead = dataclasses.replace(collective(9, False), site=LINE_30)
    hang = Behind((dumped(1, [last]),), (dumped(0, [last, ahead]),), ahead)
    assert diagnosis_text(hang, 2) == (
        "rank 1 is outside any collective; its last was all_reduce #8 of the default group at train.py:30 in main; "
        "rank 0 has waited 9 s in all_reduce #9 of the default group (1 tensor of 272 Float, 1.062 KiB) at "
        "train.py:30 in main (from the evidence of 2 ranks)"
    )
    at = StackFrame("/tmp/d.py", 10, "f", "", True)
    barrier = EnteredCollective("0", "default_pg", 2, "barrier", [], [], True, 1.0, at)  # no tensors: none said
    assert diagnosis_text(Behind((dumped(0, [barrier]),), (), None), 1) == (
        "rank 0 is outside any collective; its last was barrier #2 of the default group at d.py:10 in f (from the "
        "evidence of 1 rank)"
    )


def test_watchdog_lines_name_elements_alone():
    never = dumped(2, [], taken_s=0.0)  # it logged, but nothing pending
    timed_out = tuple(dumped(r, [logged(31, [1_048_576])], taken_s=601.0) for r in (0, 1, 3))
    assert diagnosis_text(Behind((never,), timed_out, logged(31, [1_048_576])), 4) == (
        "rank 2 is outside any collective; ranks 0, 1, 3 have waited 600 s in all_reduce #31 of the default group "
        "(1,048,576 elements) (from the evidence of 4 ranks)"
    )
    older = tuple(dumped(r, [logged(5, [])], taken_s=1801.3) for r in (0, 1))  # no element count logged
    assert diagnosis_text(Behind((), older, logged(5, [])), 2) == (
        "ranks 0, 1 have waited 1800 s in all_reduce #5 of the default group; no rank of this node is behind: a rank "
        "on another node, or the link to it, is (from the evidence of 2 ranks)"
    )
    parting = Parting(12, Side((0,), logged(12, [1], "1", "")), Side((1,), logged(12, [34_179], "1", "")), "shape")
    assert diagnosis_text(parting, 2) == (
        "the ranks' collectives part at #12 of process group 1: rank 0 ran all_reduce of 1 element where rank 1 "
        "ran all_reduce of 34,179 elements: the same collective with tensors of different shapes (from the evidence "
        "of 2 ranks)"
    )


# --- a rank Gloo aborted on a piece of another size than its collective expected

SCRIPT = "/srv/job/train.py"
CALL = "dist.all_reduce(torch.ones(1000 if rank == 0 else 999))"
ABORTED_AT = StackFrame(SCRIPT, 38, "parted", CALL, True)
LOSS = StackFrame(SCRIPT, 44, "<module>", "loss.backward()", True)
PIECES = Parted(sent=1000, expected=996, site=ABORTED_AT)
ITS = f"its collective at train.py:38 in parted ({CALL})"
DIFFER = "tensors that differ between the ranks"


def entered(seq: int, elements: int, completed: bool = True, op: str = "all_reduce", site=ABORTED_AT):
    return EnteredCollective("0", "default_pg", seq, op, [[elements]], ["Float"], completed, 1_700_000_000.0, site)


def account(rank: int, *collectives: EnteredCollective) -> HangEvidence:
    return HangEvidence(rank, "vm", 3, 1_700_000_010.0, 6.0, [], list(collectives))


def aborted(rank: int, own: HangEvidence | None = None, entering: EnteredCollective | None = None) -> RankOutcome:
    return RankOutcome(rank, "", -signal.SIGABRT, 1_700_000_010, parted=PIECES, account=own, entering=entering)


def peer(rank: int, own: HangEvidence | None = None, line: int = 44) -> RankOutcome:
    traceback = f'Traceback (most recent call last):\n  File "{SCRIPT}", line {line}, in <module>\n    x\n'
    return RankOutcome(rank, "Connection reset by peer", 1, 1_700_000_011, traceback=traceback, account=own)


def said(rank: int, *outcomes: RankOutcome, pieces: Parted = PIECES) -> str:
    return parted_text(parted_facts(pieces, rank, outcomes))


def test_both_ranks_tensors_lowest_rank_first_the_second_without_its_name_repeated():
    smaller = account(1, entered(8, 272, op="broadcast"), entered(9, 999, completed=False))
    larger = account(0, entered(8, 272, op="broadcast"), entered(9, 1000), entered(10, 272, site=LOSS))
    thousand, fewer = "1 tensor of 1,000 Float, 3.906 KiB", "1 tensor of 999 Float, 3.902 KiB"
    assert said(1, peer(0, larger), aborted(1, smaller)) == (
        f"{ITS}: rank 0's all_reduce #9 of the default group had {thousand} where rank 1's had {fewer}: {DIFFER}"
    )
    smaller, larger = account(0, entered(9, 999, completed=False)), account(1, entered(9, 1000))
    assert said(0, aborted(0, smaller), peer(1, larger)) == (
        f"{ITS}: rank 0's all_reduce #9 of the default group had {fewer} where rank 1's had {thousand}: {DIFFER}"
    )
    record = entered(0, 999, completed=False, site=None)  # the aborted rank's record: its number not known
    larger = account(0, entered(8, 272, site=LOSS), entered(9, 1000), entered(10, 272, site=LOSS))
    assert said(1, peer(0, larger), aborted(1, entering=record)) == (
        f"{ITS}: rank 0's all_reduce #9 of the default group had {thousand} where rank 1's had {fewer}: {DIFFER}"
    )


def test_the_collective_a_peer_met_it_with_is_named_with_its_own_line_or_op():
    mine = account(0, entered(9, 1, completed=False))
    extra = Parted(sent=272, expected=4, site=ABORTED_AT)
    assert said(0, aborted(0, mine), peer(1, account(1, entered(9, 68, site=LOSS))), pieces=extra) == (
        f"{ITS}: rank 0's all_reduce #9 of the default group had 1 tensor of 1 Float, 4 B where rank 1's all_reduce #9 "
        "of the default group at train.py:44 in <module> (loss.backward()) had 1 tensor of 68 Float, 272 B: a "
        "collective that only some ranks run, met by another"
    )
    assert said(0, aborted(0, mine), peer(1, account(1, entered(9, 68, op="broadcast"))), pieces=extra) == (
        f"{ITS}: rank 0's all_reduce #9 of the default group had 1 tensor of 1 Float, 4 B where rank 1's broadcast #9 "
        "of the default group had 1 tensor of 68 Float, 272 B: different collectives at the same position"
    )


def test_a_call_only_one_rank_made():
    alone = entered(0, 1, completed=False, site=None)
    others = account(1, entered(8, 272, site=LOSS), entered(9, 272, site=LOSS))
    assert said(0, aborted(0, entering=alone), peer(1, others)) == (
        f"{ITS}: rank 0's all_reduce of the default group had 1 tensor of 1 Float, 4 B; none of rank 1's last 2 "
        "collectives was called from that line: a collective that only some ranks run"
    )


def test_a_rank_without_an_account_is_unknown_with_gloos_piece():
    larger = account(0, entered(8, 272, site=LOSS), entered(9, 1000), entered(10, 272, site=LOSS))
    assert said(1, peer(0, larger), aborted(1)) == (
        f"{ITS}: rank 0's all_reduce #9 of the default group from the same line had 1 tensor of 1,000 Float, "
        "3.906 KiB; rank 1's tensors are not known (it wrote no account; Gloo aborted it on a piece of 1000 bytes "
        f"where it expected 996): {DIFFER}"
    )


def test_a_peer_unknown_at_the_same_line_or_anywhere():
    smaller = account(1, entered(8, 272, site=LOSS), entered(9, 999, completed=False))
    mine = "rank 1's all_reduce #9 of the default group had 1 tensor of 999 Float, 3.902 KiB"
    asleep = account(0, entered(8, 272, site=LOSS))
    assert said(1, peer(0, asleep, line=38), aborted(1, smaller)) == (
        f"{ITS}: {mine}; rank 0's tensors are not known (its account holds no #9 of that group), but it was at the "
        f"same line: {DIFFER}"
    )
    either = "a collective that only some ranks run, or tensors that differ"
    assert said(1, peer(0), aborted(1, smaller)) == (
        f"{ITS}: {mine}; rank 0's tensors are not known (it wrote no account): {either}"
    )
    assert said(1, aborted(1, smaller)) == f"{ITS}: {mine}: {either}"  # no peer left a word


def test_the_killed_ranks_line_carries_what_parted():
    smaller = account(1, entered(9, 999, completed=False))
    facts = parted_facts(PIECES, 1, [peer(0, account(0, entered(9, 1000))), aborted(1, smaller)])
    assert facts == GlooParted(
        1, 1000, 996, ABORTED_AT, "paired", "tensors", entered(9, 999, completed=False), "before", 0, entered(9, 1000)
    )
    assert failure_text(Killed(1, "vm", signal.SIGABRT, parted=facts)) == (
        f"rank 1 on vm was killed by signal 6 (SIGABRT): {ITS}: rank 0's all_reduce #9 of the default group had 1 "
        f"tensor of 1,000 Float, 3.906 KiB where rank 1's had 1 tensor of 999 Float, 3.902 KiB: {DIFFER}"
    )
