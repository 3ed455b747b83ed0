"""A size mismatch Gloo aborted a rank on, told from hand-made accounts (no process started): each rank's tensors where
its account holds its call, Gloo's piece (never taken for the tensors' size) where it does not. The facts
(results/failure_facts.GlooParted); tests/test_render_hang_words.py their words."""

import dataclasses
import signal

from commprof.launch.faults import RankOutcome, root_cause
from commprof.launch.parted import Parted
from commprof.results.failure_facts import GlooParted, Killed
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame

SCRIPT = "/srv/job/train.py"
CODE = "dist.all_reduce(torch.ones(1000 if rank == 0 else 999))"
LINE = StackFrame(SCRIPT, 38, "parted", CODE, True)
BACKWARD = StackFrame(SCRIPT, 44, "<module>", "loss.backward()", True)
# 1,000 floats against 999 on 2 ranks: Gloo cuts each into 4 pieces, 250 floats each but the smaller's last (249)
PIECES = Parted(sent=1000, expected=996, site=LINE)


def entered(seq: int, elements: int, completed: bool = True, op: str = "all_reduce", site=LINE) -> EnteredCollective:
    return EnteredCollective("0", "default_pg", seq, op, [[elements]], ["Float"], completed, 1_700_000_000.0, site)


def account(rank: int, *collectives: EnteredCollective) -> HangEvidence:
    return HangEvidence(rank, "vm", 3, 1_700_000_010.0, 6.0, [], list(collectives))


def aborted(rank: int, own: HangEvidence | None = None, parted: Parted = PIECES) -> RankOutcome:
    return RankOutcome(rank, "", -signal.SIGABRT, 1_700_000_010, parted=parted, account=own)


def peer(rank: int, own: HangEvidence | None = None, line: int = 44) -> RankOutcome:
    traceback = f'Traceback (most recent call last):\n  File "{SCRIPT}", line {line}, in <module>\n    x\n'
    return RankOutcome(rank, "Connection reset by peer", 1, 1_700_000_011, traceback=traceback, account=own)


def parted(outcomes: list[RankOutcome], rank: int, pieces: Parted = PIECES) -> GlooParted:
    """The cause root_cause names: `rank` on vm killed by SIGABRT, Gloo's piece and the line it was calling kept; what
    it says of the two ranks' collectives."""
    cause = root_cause(outcomes, "vm")
    assert isinstance(cause, Killed) and cause.parted is not None
    assert (cause.rank, cause.host, cause.signal, cause.oom_kills) == (rank, "vm", signal.SIGABRT, 0)
    said = cause.parted
    assert (said.rank, said.sent, said.expected, said.site) == (rank, pieces.sent, pieces.expected, LINE)
    return said


def test_each_ranks_tensor_is_named_from_its_account_whichever_rank_gloo_aborts():
    """The smaller rank waited in its all-reduce long enough to write the account of a stall; the larger wrote its
    account as it failed: #9 of each, 1,000 floats on one rank and 999 on the other, named for the right rank."""
    smaller = account(1, entered(8, 272, op="broadcast"), entered(9, 999, completed=False))
    larger = account(0, entered(8, 272, op="broadcast"), entered(9, 1000), entered(10, 272, site=BACKWARD))
    said = parted([peer(0, larger), aborted(1, smaller)], 1)
    assert (said.case, said.kind, said.peer) == ("paired", "tensors", 0)
    assert said.mine == entered(9, 999, completed=False) and said.theirs == entered(9, 1000)
    smaller, larger = account(0, entered(9, 999, completed=False)), account(1, entered(9, 1000))
    said = parted([aborted(0, smaller), peer(1, larger)], 0)
    assert (said.case, said.kind, said.peer) == ("paired", "tensors", 1)
    assert said.mine == entered(9, 999, completed=False) and said.theirs == entered(9, 1000)


def test_the_aborted_ranks_record_of_its_call_names_its_tensor():
    """Gloo aborts the smaller rank before it writes an account, but the record it wrote as it called the collective
    (instrument/entering.py: its sequence number not known) names its 999 floats: paired with the peer's call from the
    same line, both sizes are said, and Gloo's piece is not."""
    larger = account(0, entered(8, 272, site=BACKWARD), entered(9, 1000), entered(10, 272, site=BACKWARD))
    record = entered(0, 999, completed=False, site=None)
    said = parted([peer(0, larger), dataclasses.replace(aborted(1), entering=record)], 1)
    assert (said.case, said.kind, said.peer, said.mine_unknown) == ("paired", "tensors", 0, "no_account")
    assert said.mine == dataclasses.replace(record, site=LINE)  # called from the line Gloo aborted it at
    assert said.theirs == entered(9, 1000)  # the peer's latest from that line


def test_a_call_only_one_rank_made_is_named_from_its_record():
    """Rank 0 alone all-reduces one float: its record names it, and none of rank 1's last collectives came from its
    line."""
    alone = entered(0, 1, completed=False, site=None)
    others = account(1, entered(8, 272, site=BACKWARD), entered(9, 272, site=BACKWARD))
    said = parted([dataclasses.replace(aborted(0), entering=alone), peer(1, others)], 0)
    assert (said.case, said.kind, said.peer, said.peer_calls) == ("none_from_line", "only_some", 1, 2)
    assert said.mine == dataclasses.replace(alone, site=LINE) and said.theirs is None


def test_a_rank_without_an_account_is_said_to_be_unknown_with_gloos_piece():
    """The usual end: Gloo aborts the smaller rank before it writes anything; the peer's account names its own 1,000
    floats from the same line, and the aborted rank's tensors are not known: Gloo's 1000 and 996 bytes are a piece's."""
    larger = account(0, entered(8, 272, site=BACKWARD), entered(9, 1000), entered(10, 272, site=BACKWARD))
    said = parted([peer(0, larger), aborted(1)], 1)
    assert (said.case, said.kind, said.peer) == ("theirs", "tensors", 0)
    assert said.mine is None and said.mine_unknown == "no_account" and said.theirs == entered(9, 1000)


def test_a_peers_account_written_before_the_collective_proves_nothing_its_line_does():
    """The larger rank slept (its account is that stall's, taken before #9) and then called the same line, as its
    recorded traceback says: its tensors are not known, and it is not said to have run another collective."""
    smaller = account(1, entered(8, 272, site=BACKWARD), entered(9, 999, completed=False))
    asleep = account(0, entered(8, 272, site=BACKWARD))
    said = parted([peer(0, asleep, line=38), aborted(1, smaller)], 1)
    assert (said.case, said.kind, said.peer, said.peer_unknown) == ("same_line", "tensors", 0, "no_seq")
    assert said.mine == entered(9, 999, completed=False) and said.theirs is None


def test_the_collective_a_peer_met_it_with_is_named_with_its_own_line_or_op():
    """Paired by sequence number: another line's all-reduce (a collective only the aborted rank runs), or a
    broadcast at the same position."""
    mine = account(0, entered(9, 1, completed=False))
    extra = Parted(sent=272, expected=4, site=LINE)
    said = parted([aborted(0, mine, extra), peer(1, account(1, entered(9, 68, site=BACKWARD)))], 0, extra)
    assert (said.case, said.kind, said.peer) == ("paired", "only_some_met", 1)
    assert said.mine == entered(9, 1, completed=False) and said.theirs == entered(9, 68, site=BACKWARD)
    said = parted([aborted(0, mine, extra), peer(1, account(1, entered(9, 68, op="broadcast")))], 0, extra)
    assert (said.case, said.kind, said.peer) == ("paired", "op", 1)
    assert said.theirs == entered(9, 68, op="broadcast")
