"""A size mismatch Gloo aborted a rank on, said from hand-made accounts (no process started): each rank's tensors where
its account holds its call, Gloo's piece (never called the tensors' size) where it does not."""

import dataclasses
import signal

from commprof.launch.faults import RankOutcome, root_cause
from commprof.launch.parted import Parted
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame

SCRIPT = "/srv/job/train.py"
CODE = "dist.all_reduce(torch.ones(1000 if rank == 0 else 999))"
LINE = StackFrame(SCRIPT, 38, "parted", CODE, True)
BACKWARD = StackFrame(SCRIPT, 44, "<module>", "loss.backward()", True)
# 1,000 floats against 999 on 2 ranks: Gloo cuts each into 4 pieces, 250 floats each but the smaller's last (249)
PIECES = Parted(sent=1000, expected=996, site=LINE)
KILLED = "on vm was killed by signal 6 (SIGABRT): its collective at train.py:38 in parted (dist.all_reduce(torch.ones("
KILLED += "1000 if rank == 0 else 999)))"


def entered(seq: int, elements: int, completed: bool = True, op: str = "all_reduce", site=LINE) -> EnteredCollective:
    return EnteredCollective("0", "default_pg", seq, op, [[elements]], ["Float"], completed, 1_700_000_000.0, site)


def account(rank: int, *collectives: EnteredCollective) -> HangEvidence:
    return HangEvidence(rank, "vm", 3, 1_700_000_010.0, 6.0, [], list(collectives))


def aborted(rank: int, own: HangEvidence | None = None, parted: Parted = PIECES) -> RankOutcome:
    return RankOutcome(rank, "", -signal.SIGABRT, 1_700_000_010, parted=parted, account=own)


def peer(rank: int, own: HangEvidence | None = None, line: int = 44) -> RankOutcome:
    traceback = f'Traceback (most recent call last):\n  File "{SCRIPT}", line {line}, in <module>\n    x\n'
    return RankOutcome(rank, "Connection reset by peer", 1, 1_700_000_011, traceback=traceback, account=own)


def test_each_ranks_tensor_is_named_from_its_account_whichever_rank_gloo_aborts():
    """The smaller rank waited in its all-reduce long enough to write the account of a stall; the larger wrote its
    account as it failed: #9 of each, 1,000 floats on one rank and 999 on the other, named for the right rank."""
    smaller = account(1, entered(8, 272, op="broadcast"), entered(9, 999, completed=False))
    larger = account(0, entered(8, 272, op="broadcast"), entered(9, 1000), entered(10, 272, site=BACKWARD))
    assert root_cause([peer(0, larger), aborted(1, smaller)], "vm") == (
        f"rank 1 {KILLED}: rank 0's all_reduce #9 of the default group had 1 tensor of 1,000 Float, 3.906 KiB where "
        "rank 1's had 1 tensor of 999 Float, 3.902 KiB: tensors that differ between the ranks"
    )
    smaller, larger = account(0, entered(9, 999, completed=False)), account(1, entered(9, 1000))
    assert root_cause([aborted(0, smaller), peer(1, larger)], "vm") == (
        f"rank 0 {KILLED}: rank 0's all_reduce #9 of the default group had 1 tensor of 999 Float, 3.902 KiB where "
        "rank 1's had 1 tensor of 1,000 Float, 3.906 KiB: tensors that differ between the ranks"
    )


def test_the_aborted_ranks_record_of_its_call_names_its_tensor():
    """Gloo aborts the smaller rank before it writes an account, but the record it wrote as it called the collective
    (instrument/entering.py: its sequence number not known) names its 999 floats: paired with the peer's call from the
    same line, both sizes are said, and Gloo's piece is not."""
    larger = account(0, entered(8, 272, site=BACKWARD), entered(9, 1000), entered(10, 272, site=BACKWARD))
    record = entered(0, 999, completed=False, site=None)
    said = root_cause([peer(0, larger), dataclasses.replace(aborted(1), entering=record)], "vm")
    assert said == (
        f"rank 1 {KILLED}: rank 0's all_reduce #9 of the default group had 1 tensor of 1,000 Float, 3.906 KiB where "
        "rank 1's had 1 tensor of 999 Float, 3.902 KiB: tensors that differ between the ranks"
    )


def test_a_call_only_one_rank_made_is_named_from_its_record():
    """Rank 0 alone all-reduces one float: its record names it, and none of rank 1's last collectives came from its
    line."""
    alone = entered(0, 1, completed=False, site=None)
    others = account(1, entered(8, 272, site=BACKWARD), entered(9, 272, site=BACKWARD))
    said = root_cause([dataclasses.replace(aborted(0), entering=alone), peer(1, others)], "vm")
    assert said == (
        f"rank 0 {KILLED}: rank 0's all_reduce of the default group had 1 tensor of 1 Float, 4 B; none of rank 1's "
        "last 2 collectives was called from that line: a collective that only some ranks run"
    )


def test_a_rank_without_an_account_is_said_to_be_unknown_with_gloos_piece():
    """The usual end: Gloo aborts the smaller rank before it writes anything; the peer's account names its own 1,000
    floats from the same line, and the aborted rank's tensors are not known: Gloo's 1000 and 996 bytes are a piece's."""
    larger = account(0, entered(8, 272, site=BACKWARD), entered(9, 1000), entered(10, 272, site=BACKWARD))
    assert root_cause([peer(0, larger), aborted(1)], "vm") == (
        f"rank 1 {KILLED}: rank 0's all_reduce #9 of the default group from the same line had 1 tensor of 1,000 Float, "
        "3.906 KiB; rank 1's tensors are not known (it wrote no account; Gloo aborted it on a piece of 1000 bytes "
        "where it expected 996): tensors that differ between the ranks"
    )


def test_a_peers_account_written_before_the_collective_proves_nothing_its_line_does():
    """The larger rank slept (its account is that stall's, taken before #9) and then called the same line, as its
    recorded traceback says: its tensors are not known, and it is not said to have run another collective."""
    smaller = account(1, entered(8, 272, site=BACKWARD), entered(9, 999, completed=False))
    asleep = account(0, entered(8, 272, site=BACKWARD))
    assert root_cause([peer(0, asleep, line=38), aborted(1, smaller)], "vm") == (
        f"rank 1 {KILLED}: rank 1's all_reduce #9 of the default group had 1 tensor of 999 Float, 3.902 KiB; rank 0's "
        "tensors are not known (its account holds no #9 of that group), but it was at the same line: tensors that "
        "differ between the ranks"
    )


def test_the_collective_a_peer_met_it_with_is_named_with_its_own_line_or_op():
    """Paired by sequence number: another line's all-reduce (a collective only the aborted rank runs), or a
    broadcast at the same position."""
    mine = account(0, entered(9, 1, completed=False))
    extra = Parted(sent=272, expected=4, site=LINE)
    assert root_cause([aborted(0, mine, extra), peer(1, account(1, entered(9, 68, site=BACKWARD)))], "vm") == (
        f"rank 0 {KILLED}: rank 0's all_reduce #9 of the default group had 1 tensor of 1 Float, 4 B where rank 1's "
        "all_reduce #9 of the default group at train.py:44 in <module> (loss.backward()) had 1 tensor of 68 Float, "
        "272 B: a collective that only some ranks run, met by another"
    )
    assert root_cause([aborted(0, mine, extra), peer(1, account(1, entered(9, 68, op="broadcast")))], "vm") == (
        f"rank 0 {KILLED}: rank 0's all_reduce #9 of the default group had 1 tensor of 1 Float, 4 B where rank 1's "
        "broadcast #9 of the default group had 1 tensor of 68 Float, 272 B: different collectives at the same position"
    )
