"""What a rank does after its script returned (worker/script_end.py), over a real store on loopback with each rank a
thread: every rank's script returned, so they measure; a rank still inside a collective releases the ones that
returned, with where it waits; a rank's failure lets the others leave at once. And the launch's words for it
(launch/script_ends.py), from hand-made outcomes."""

import threading
from datetime import timedelta
from pathlib import Path

import pytest
import torch.distributed as dist

from commprof.launch.faults import RankOutcome, fired_timeout_s, root_cause
from commprof.launch.script_ends import ended_early
from commprof.results.failure_facts import EndedEarly, Limit, Stuck
from commprof.results.hang import FOLDER_VARIABLE, EnteredCollective, HangEvidence, StackFrame
from commprof.results.script_ended import ScriptEnded, read_ended
from commprof.worker.script_end import ScriptEnd

WAITING = EnteredCollective("0", "default_pg", 31, "all_reduce", [[69904]], ["Float"], False, 0.0)


@pytest.fixture
def store(monkeypatch, tmp_path: Path):
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10), wait_for_workers=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(server.port))
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    return server


def in_thread(call):
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", call()), daemon=True)
    thread.start()
    return thread, result


def test_every_rank_returned_so_they_measure(store):
    ends = [ScriptEnd("run/a", rank, 2, list) for rank in range(2)]
    first, said = in_thread(lambda: ends[0].returned(40))
    assert ends[1].returned(40) is True
    first.join(10)
    assert said["value"] is True and ends[0].left_because is None


def test_a_rank_inside_a_collective_releases_the_rank_that_returned(store, tmp_path: Path):
    returned, waiting = ScriptEnd("run/b", 1, 2, list), ScriptEnd("run/b", 0, 2, lambda: [WAITING])
    thread, said = in_thread(lambda: returned.returned(25))
    store.wait(["run/b/returned"])  # rank 1 said its script returned
    waiting.while_stalled(0.5, 25)  # not stalled a second yet: nothing
    assert thread.is_alive()
    waiting.while_stalled(1.2, 25)
    thread.join(10)
    assert said["value"] is False
    assert returned.left_because == "rank 0 waits in all_reduce #31 of the default group after step 25"
    assert read_ended(tmp_path) == {1: ScriptEnded(1, returned.host, 25, returned.left_because)}


def test_a_rank_that_is_not_inside_a_collective_is_waited_for(store):
    returned, saving = ScriptEnd("run/c", 1, 2, list), ScriptEnd("run/c", 0, 2, list)  # a final checkpoint
    thread, said = in_thread(lambda: returned.returned(40))
    store.wait(["run/c/returned"])
    saving.while_stalled(5.0, 40)
    thread.join(0.2)
    assert thread.is_alive()  # still waiting: the save is not a hang
    assert saving.returned(40) is True
    thread.join(10)
    assert said["value"] is True


def test_a_failed_script_lets_the_others_leave(store):
    returned, failing = ScriptEnd("run/d", 0, 2, list), ScriptEnd("run/d", 1, 2, list)
    thread, said = in_thread(lambda: returned.returned(6))
    failing.failed("ValueError: bad batch")
    thread.join(10)
    assert said["value"] is False and returned.left_because == "rank 1's script failed (ValueError: bad batch)"


def test_uneven_inputs_are_said_with_the_rank_that_finished_and_what_to_do():
    site = StackFrame("/w/train.py", 60, "<module>", "loss.backward()", True)
    account = HangEvidence(0, "vm", 25, 0.0, 0.0, [], [EnteredCollective(**{**WAITING.__dict__, "site": site})])
    outcomes = [
        RankOutcome(0, "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:21924.", 1, account=account),
        RankOutcome(1, "", 0),
    ]
    ended = {1: ScriptEnded(1, "vm", 25, "rank 0 waits in all_reduce #31 of the default group after step 25")}
    assert ended_early(ended, outcomes, "vm") == EndedEarly(
        (1,),
        "vm",
        steps=25,
        status=0,
        waiting=ended[1].left_because,  # the words of the rank that waited, as the ended rank kept them
        site=site,  # the line that called the collective rank 0 waited in
        failed="Connection closed by peer",  # what rank 0 then failed with, in plain words
    )
    raised = [RankOutcome(0, "ValueError: bad batch", 1), RankOutcome(1, "", 0)]
    assert ended_early(ended, raised, "vm") is None  # a rank's own error is the cause


def test_the_timeout_said_is_the_one_that_fired():
    gloo = "RuntimeError: [unbound_buffer.cc:78] Timed out waiting 15000ms for recv operation to complete"
    nccl = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, Timeout(ms)=600000)"
    assert (fired_timeout_s(gloo), fired_timeout_s(nccl), fired_timeout_s("Connection closed")) == (15.0, 600.0, None)
    outcomes = [RankOutcome(0, gloo, 1), RankOutcome(1, "stopped by the launcher (SIGTERM) while still running", -15)]
    assert root_cause(outcomes, "vm", 300.0) == Stuck((1,), (0,), "vm", Limit(15, "own"))
    ours = [RankOutcome(0, gloo.replace("15000ms", "300000ms"), 1), outcomes[1]]
    assert root_cause(ours, "vm", 300.0) == Stuck((1,), (0,), "vm", Limit(300, "--timeout"))
