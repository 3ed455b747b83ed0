"""A hang told from each rank's own evidence: the Flight Recorder's last collectives per process group (the JSON
torch 2.13 returns for a Gloo rank), the rank's stack reduced to the user's code, and the one sentence."""

import threading

from commprof.instrument.hang_watch import HangWatch, last_collectives, own_code, stack_of
from commprof.launch.hang_evidence import describe_hang
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame, read_evidence


def entry(seq: int, numel: int = 1000, dtype: str = "Float", group: str = "0") -> dict:
    """One entry of `_dump_fr_trace_json()` as a Gloo rank of torch 2.13 writes it (fields it has and is read by)."""
    return {
        "collective_seq_id": seq,
        "input_dtypes": [dtype],
        "input_sizes": [[numel]],
        "is_p2p": False,
        "pg_id": int(group),
        "process_group": [group, "default_pg" if group == "0" else "undefined"],
        "profiling_name": "gloo:all_reduce",
        "state": "scheduled",
        "time_created_ns": 1_795_748_136_000_000_000 + seq * 1_000_000_000,
    }


def status(enqueued: int, completed: int) -> dict:
    return {"last_enqueued_collective": str(enqueued), "last_completed_collective": str(completed)}


def test_the_last_collective_of_each_group_and_whether_the_rank_is_inside_it():
    waiting = {"entries": [entry(1), entry(2)], "pg_status": {"0": status(2, 1)}}
    (inside,) = last_collectives(waiting)
    assert (inside.group, inside.group_desc, inside.seq, inside.op) == ("0", "default_pg", 2, "all_reduce")
    assert not inside.completed and inside.sizes == [[1000]] and inside.dtypes == ["Float"]
    assert inside.entered_s == 1_795_748_138.0
    done = {"entries": [entry(1), entry(1, group="1")], "pg_status": {"0": status(1, 1), "1": status(1, 0)}}
    assert [(c.group, c.completed) for c in last_collectives(done)] == [("0", True), ("1", False)]
    assert last_collectives({}) == []


def test_own_code_is_neither_pythons_library_nor_a_package_nor_commprof(tmp_path):
    assert own_code(str(tmp_path / "train.py"))
    assert not own_code(threading.__file__)
    assert not own_code(own_code.__code__.co_filename)  # commprof's own
    import torch

    assert not own_code(torch.__file__) and not own_code("<string>")


def test_a_threads_stack_ends_where_it_waits():
    here = threading.Event()
    release = threading.Event()

    def park():
        here.set()
        release.wait()

    thread = threading.Thread(target=park)
    thread.start()
    here.wait()
    try:
        frames = stack_of(thread.ident)
        assert [f.function for f in frames][-3:] == ["park", "wait", "wait"]
        park_frame = next(f for f in frames if f.function == "park")
        assert park_frame.code == "release.wait()" and park_frame.own  # this test's file is nobody's library
    finally:
        release.set()
        thread.join()


def evidence(rank: int, steps: int, collectives: list[EnteredCollective], line: int, code: str) -> HangEvidence:
    frames = [
        StackFrame("/home/u/train.py", line, "main", code, True),
        StackFrame("/venv/site-packages/torch/_tensor.py", 600, "backward", "torch.autograd.backward(...)", False),
    ]
    return HangEvidence(rank, "node0", steps, 1_795_748_150.0, 7.0, frames, collectives)


def collective(seq: int, completed: bool, numel: int = 272) -> EnteredCollective:
    return EnteredCollective("0", "default_pg", seq, "all_reduce", [[numel]], ["Float"], completed, 1_795_748_141.0)


def test_the_rank_outside_any_collective_is_behind_the_ones_waiting():
    stuck = evidence(1, 3, [collective(3, True)], 27, "time.sleep(3600)")
    waiting = evidence(0, 3, [collective(4, False)], 30, "loss.backward()")
    assert describe_hang({0: waiting, 1: stuck}) == (
        "rank 1 is at train.py:27 in main (time.sleep(3600)), outside any collective, after step 3; "
        "rank 0 has waited 9 s in all_reduce #4 of the default group (1 tensor of 272 Float, 1.1 KB) at train.py:30 "
        "in main (loss.backward())"
    )


def test_a_rank_in_an_earlier_collective_is_behind_too():
    earlier = evidence(1, 3, [collective(3, False)], 12, "dist.broadcast(t, 0)")
    ahead = evidence(0, 3, [collective(4, False)], 30, "loss.backward()")
    said = describe_hang({0: ahead, 1: earlier})
    assert said.startswith("rank 1 is at train.py:12 in main (dist.broadcast(t, 0)), waiting in all_reduce #3 of")
    assert "; rank 0 has waited 9 s in all_reduce #4" in said


def test_every_rank_in_the_same_collective_points_beyond_this_node():
    ranks = {r: evidence(r, 5, [collective(9, False)], 30, "loss.backward()") for r in (0, 1)}
    assert describe_hang(ranks) == (
        "ranks 0, 1 have waited 9 s in all_reduce #9 of the default group (1 tensor of 272 Float, 1.1 KB) at "
        "train.py:30 in main (loss.backward()); no rank of this node is behind: a rank on another node, or the "
        "link to it, is"
    )


def test_without_a_flight_recorder_each_rank_is_placed_fewest_steps_first():
    ranks = {0: evidence(0, 5, [], 30, "loss.backward()"), 1: evidence(1, 3, [], 27, "time.sleep(3600)")}
    assert describe_hang(ranks) == (
        "rank 1 is at train.py:27 in main (time.sleep(3600)), outside any collective, after step 3; "
        "rank 0 is at train.py:30 in main (loss.backward()), outside any collective, after step 5"
    )
    assert describe_hang({}) is None


def test_a_built_in_runs_rank_waits_in_commprofs_training_step():
    frames = [
        StackFrame("/x/commprof/worker/training.py", 61, "train_step", "loss.backward()", False),
        StackFrame("/venv/site-packages/torch/_tensor.py", 600, "backward", "torch.autograd.backward(...)", False),
    ]
    waiting = HangEvidence(0, "node0", 5, 1_795_748_150.0, 7.0, frames, [collective(17, False)])
    stuck = evidence(1, 5, [collective(16, True)], 34, "time.sleep(3600)")
    assert describe_hang({0: waiting, 1: stuck}).endswith(
        "rank 0 has waited 9 s in all_reduce #17 of the default group (1 tensor of 272 Float, 1.1 KB) in commprof's "
        "train_step (training.py:61)"
    )


def test_many_ranks_behind_are_counted_after_the_first_three():
    ranks = {r: evidence(r, 3, [collective(3, True)], 27, "time.sleep(3600)") for r in range(1, 6)}
    ranks[0] = evidence(0, 3, [collective(4, False)], 30, "loss.backward()")
    said = describe_hang(ranks)
    assert said.count("outside any collective") == 3 and "after step 3 (and 2 more ranks); rank 0 has" in said


def test_a_watch_writes_what_it_sees_and_the_launch_reads_it(tmp_path):
    watch = HangWatch(tmp_path, 3, timeout_s=20, collectives=lambda: [collective(4, False)])
    assert watch.stall_s == 10 and HangWatch(tmp_path, 0, timeout_s=300).stall_s == 30
    watch.stepped()
    watch.stepped()
    watch.write(12.5)
    read = read_evidence(tmp_path)
    assert list(tmp_path.glob("*.partial")) == [] and list(read) == [3]
    written = read[3]
    assert (written.rank, written.steps_done, written.stalled_s) == (3, 2, 12.5)
    assert written.collectives == [collective(4, False)]
    assert written.stack[-1].function == "stack_of"  # taken of the thread that made the watch: this one
    (tmp_path / "hang_rank7.json").write_text('{"rank": 7, "not": "evidence"')  # a rank killed mid-write
    assert list(read_evidence(tmp_path)) == [3]
