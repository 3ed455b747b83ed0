"""A hang told from each rank's own evidence: the Flight Recorder's last collectives per process group (the JSON
torch 2.13 returns for a Gloo rank), the rank's stack reduced to the user's code, and the hang they tell: who is behind
and who waits in what, or where the ranks' collectives part (the facts; tests/test_render_hang_words.py their words)."""

import threading

from commprof.instrument.hang_watch import EXIT, STOP, HangWatch, own_code, recent_collectives, stack_of
from commprof.launch.hang_evidence import describe_hang
from commprof.results.failure_facts import Behind, Parting, Side
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame, read_evidence


def entry(seq: int, numel: int = 1000, dtype: str = "Float", group: str = "0", line: int = 20) -> dict:
    """One entry of `_dump_fr_trace()` as a Gloo rank of torch 2.13 writes it (the fields commprof reads), called
    from line `line` of a user's train.py (its frames innermost first, torch's own before it)."""
    return {
        "collective_seq_id": seq,
        "input_dtypes": [dtype],
        "input_sizes": [[numel]],
        "is_p2p": False,
        "pg_id": int(group),
        "process_group": (group, "default_pg" if group == "0" else "undefined"),
        "profiling_name": "gloo:all_reduce",
        "state": "scheduled",
        "time_created_ns": 1_795_748_136_000_000_000 + seq * 1_000_000_000,
        "frames": [
            {
                "name": "all_reduce",
                "filename": "/venv/site-packages/torch/distributed/distributed_c10d.py",
                "line": 3245,
            },
            {"name": "main", "filename": "/home/u/train.py", "line": line},
        ],
    }


def status(enqueued: int, completed: int) -> dict:
    return {"last_enqueued_collective": enqueued, "last_completed_collective": completed}


def test_the_recent_collectives_of_each_group_whether_the_rank_is_inside_and_who_called():
    waiting = {"entries": [entry(s) for s in range(1, 12)], "pg_status": {"0": status(11, 10)}}
    recent = recent_collectives(waiting)
    assert [c.seq for c in recent] == list(range(4, 12))  # the last 8
    last = recent[-1]
    assert (last.group, last.group_desc, last.seq, last.op) == ("0", "default_pg", 11, "all_reduce")
    assert not last.completed and all(c.completed for c in recent[:-1])
    assert last.sizes == [[1000]] and last.dtypes == ["Float"] and last.entered_s == 1_795_748_147.0
    assert (last.site.file, last.site.line, last.site.function, last.site.own) == ("/home/u/train.py", 20, "main", True)
    done = {"entries": [entry(1), entry(1, group="1")], "pg_status": {"0": status(1, 1), "1": status(1, 0)}}
    assert [(c.group, c.completed) for c in recent_collectives(done)] == [("0", True), ("1", False)]
    assert recent_collectives({}) == []


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


def collective(
    seq: int, completed: bool, numel: int = 272, op: str = "all_reduce", dtype: str = "Float", line: int = 30
) -> EnteredCollective:
    site = StackFrame("/home/u/train.py", line, "main", f"line {line}", True)
    return EnteredCollective("0", "default_pg", seq, op, [[numel]], [dtype], completed, 1_795_748_141.0, site)


def test_the_rank_outside_any_collective_is_behind_the_ones_waiting():
    stuck = evidence(1, 3, [collective(2, True), collective(3, True)], 27, "time.sleep(3600)")
    waiting = evidence(0, 3, [collective(2, True), collective(3, True), collective(4, False)], 30, "loss.backward()")
    hang = describe_hang({0: waiting, 1: stuck})
    assert hang == Behind(behind=(stuck,), waiting=(waiting,), ahead=collective(4, False))
    assert stuck.inside is None and stuck.own_frame.line == 27  # outside any collective, at its own line


def test_a_rank_in_an_earlier_collective_is_behind_too():
    earlier = evidence(1, 3, [collective(3, False)], 12, "dist.broadcast(t, 0)")
    ahead = evidence(0, 3, [collective(4, False)], 30, "loss.backward()")
    hang = describe_hang({0: ahead, 1: earlier})
    assert hang == Behind(behind=(earlier,), waiting=(ahead,), ahead=collective(4, False))
    assert hang.behind[0].inside == collective(3, False)  # behind: waiting in an earlier one of the same group


def test_every_rank_in_the_same_collective_points_beyond_this_node():
    ranks = {r: evidence(r, 5, [collective(9, False)], 30, "loss.backward()") for r in (0, 1)}
    assert describe_hang(ranks) == Behind(behind=(), waiting=(ranks[0], ranks[1]), ahead=collective(9, False))


def test_without_a_flight_recorder_each_rank_is_placed_fewest_steps_first():
    ranks = {0: evidence(0, 5, [], 30, "loss.backward()"), 1: evidence(1, 3, [], 27, "time.sleep(3600)")}
    assert describe_hang(ranks) == Behind(behind=(ranks[1], ranks[0]), waiting=(), ahead=None)
    assert describe_hang({}) is None


def test_a_built_in_runs_rank_waits_in_commprofs_training_step():
    frames = [
        StackFrame("/x/commprof/worker/training.py", 61, "train_step", "loss.backward()", False),
        StackFrame("/venv/site-packages/torch/_tensor.py", 600, "backward", "torch.autograd.backward(...)", False),
    ]
    waiting = HangEvidence(0, "node0", 5, 1_795_748_150.0, 7.0, frames, [collective(17, False)])
    stuck = evidence(1, 5, [collective(16, True)], 34, "time.sleep(3600)")
    hang = describe_hang({0: waiting, 1: stuck})
    assert hang == Behind(behind=(stuck,), waiting=(waiting,), ahead=collective(17, False))
    assert waiting.own_frame is None  # no line of the script's: commprof's own loop is where it waits


def test_many_ranks_behind_are_counted_after_the_first_three():
    ranks = {r: evidence(r, 3, [collective(3, True)], 27, "time.sleep(3600)") for r in range(1, 6)}
    ranks[0] = evidence(0, 3, [collective(4, False)], 30, "loss.backward()")
    hang = describe_hang(ranks)
    assert isinstance(hang, Behind) and hang.ahead == collective(4, False)
    assert [e.rank for e in hang.behind] == [1, 2, 3, 4, 5] and [e.rank for e in hang.waiting] == [0]
    assert all(e.inside is None and e.steps_done == 3 for e in hang.behind)


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


def test_shapes_that_differ_at_the_same_call_are_named():
    """Both ranks all-reduce at line 23, rank 0 2 floats, rank 1 3: rank 0 went on (Gloo let it), rank 1 waits."""
    rank0 = evidence(0, 3, [collective(9, True, 2, line=23), collective(10, False)], 34, "loss.backward()")
    rank1 = evidence(1, 3, [collective(8, True), collective(9, False, 3, line=23)], 23, "dist.all_reduce(t)")
    assert describe_hang({0: rank0, 1: rank1}) == Parting(
        seq=9,
        first=Side((0,), collective(9, True, 2, line=23)),
        second=Side((1,), collective(9, False, 3, line=23)),
        mismatch="shape",
        lines_known=True,
    )


def test_an_op_a_dtype_and_a_collective_of_one_rank_alone_are_told_apart():
    def parted(mine: EnteredCollective, theirs: EnteredCollective) -> str:
        ranks = {0: evidence(0, 3, [mine], 30, "x"), 1: evidence(1, 3, [theirs], 30, "x")}
        hang = describe_hang(ranks)
        assert isinstance(hang, Parting) and hang.seq == 9
        assert (hang.first, hang.second) == (Side((0,), mine), Side((1,), theirs))
        return hang.mismatch

    assert parted(collective(9, False, 4), collective(9, False, 4, op="broadcast")) == "op"
    assert parted(collective(9, False, 4), collective(9, False, 4, dtype="Int")) == "dtype"
    assert parted(collective(9, False, 1, line=15), collective(9, False, 272, line=34)) == "only_some_met"
    assert parted(collective(9, False, 1, line=15), collective(9, False, 272, line=15)) == "shape"  # the same line


def test_the_deadline_passes_once_a_rank_has_waited_in_one_collective_past_timeout_and_grace(tmp_path):
    from commprof.launch.deadline import GRACE_S, CollectiveDeadline
    from commprof.results.failure_facts import Overdue
    from commprof.results.hang import encode, evidence_path

    now = [1_795_748_141.0]
    deadline = CollectiveDeadline(tmp_path, timeout_s=10, clock=lambda: now[0])
    assert not deadline.passed() and deadline.overdue is None  # nothing written: nothing known
    waiting = evidence(0, 3, [collective(3, True), collective(4, False)], 30, "loss.backward()")  # entered at 141
    stuck = evidence(1, 3, [collective(3, True)], 27, "time.sleep(3600)")
    for written in (waiting, stuck):
        evidence_path(tmp_path, written.rank).write_bytes(encode(written))
    now[0] += 10 + GRACE_S - 0.5
    assert not deadline.passed()
    now[0] += 1
    assert deadline.passed() and deadline.overdue == Behind((stuck,), (waiting,), collective(4, False))
    assert GRACE_S == 15
    assert deadline.summary("vm") == Overdue(deadline.overdue, "vm", timeout_s=10, grace_s=15, mpi=False)


def test_a_stall_is_withdrawn_as_soon_as_its_rank_steps_again(tmp_path):
    """A pause (a checkpoint on this rank, or a wait for one on another) is written as a stall once it lasts half the
    timeout; the rank's next step removes the account, and an account taken while the rank stepped is not written:
    it would describe a stall that is over. A rank stopped by its launcher writes where it was all the same."""
    watch = HangWatch(tmp_path, 1, timeout_s=20, collectives=lambda: [collective(4, False)])
    watch.stepped()
    watch.write(12.0)
    assert list(read_evidence(tmp_path)) == [1]
    watch.stepped()
    assert read_evidence(tmp_path) == {} and list(tmp_path.iterdir()) == []
    watch.write(11.0, steps=1)  # begun after step 1, finished after step 2
    assert read_evidence(tmp_path) == {}
    watch.write(0.3, steps=1, kind=STOP)  # stopped as it stepped: where it was then
    assert read_evidence(tmp_path)[1].steps_done == 2
    watch.write(0.3, kind=EXIT, stack=[])  # then it failed: its error's traceback tells better
    assert read_evidence(tmp_path)[1].stack == []
    watch.write(0.4, kind=STOP)
    watch.write(6.0)  # leaving: no stall is written any more
    assert read_evidence(tmp_path)[1].stack == [] and read_evidence(tmp_path)[1].stalled_s == 0.3


def test_the_deadline_acts_only_on_a_wait_still_going_on(tmp_path):
    """The default --timeout (300 s) and an injected clock: rank 1 waited 40 s in all_reduce #4 while rank 0 saved a
    checkpoint, then both stepped on. Long past --timeout and the grace since that wait began, the deadline does not
    pass: the account was withdrawn. An account that stopped being rewritten (FRESH_S) is not acted on either; one
    rewritten while the wait goes on is."""
    from commprof.launch.deadline import FRESH_S, GRACE_S, CollectiveDeadline
    from commprof.results.hang import encode, evidence_path

    entered = 1_795_748_141.0  # collective() enters at this time
    now = [entered + 40]
    deadline = CollectiveDeadline(tmp_path, timeout_s=300, clock=lambda: now[0])
    watch = HangWatch(tmp_path, 1, timeout_s=300, collectives=lambda: [collective(3, True), collective(4, False)])
    watch.write(40.0)
    assert not deadline.passed()
    watch.stepped()
    for later in (300 + GRACE_S + 1, 3600, 86_400):
        now[0] = entered + later
        assert not deadline.passed() and deadline.overdue is None

    def written_at(taken_s: float) -> None:
        account = evidence(1, 3, [collective(3, True), collective(4, False)], 30, "loss.backward()")
        account = HangEvidence(**{**account.__dict__, "taken_s": taken_s})
        evidence_path(tmp_path, 1).write_bytes(encode(account))

    now[0] = entered + 300 + GRACE_S + 1
    written_at(now[0] - FRESH_S - 1)  # its rank stopped rewriting it
    assert not deadline.passed()
    written_at(now[0] - 2)
    assert deadline.passed() and isinstance(deadline.overdue, Behind)
    assert deadline.overdue.behind == () and [e.rank for e in deadline.overdue.waiting] == [1]
    assert deadline.overdue.ahead == collective(4, False)  # entered at a known time: it has waited so long


def test_only_a_timeout_given_on_the_command_line_bounds_a_scripts_own_process_groups():
    """A script whose process group has 30 minutes of its own (Lightning, the HF Trainer, DeepSpeed) keeps them under
    commprof's default --timeout; naming --timeout, even at its default value, makes commprof's deadline apply."""
    from commprof.cli.options import build_request

    assert "timeout_s" not in build_request({}).named
    assert "timeout_s" in build_request({"timeout": 300.0}, frozenset({"timeout"})).named


def test_a_collective_still_waiting_behind_a_later_one_that_completed_is_inside():
    """Gloo runs a group's collectives on several threads: DDP's 4 MB bucket (#68) completed while the 29 MB one
    before it (#67) still waited for a peer that was gone. The group's last completed number is 68; each entry's own
    `retired` says which is still going on (torch 2.13, measured on the multi-host bed with a link cut)."""
    dump = {"entries": [entry(67), entry(68)], "pg_status": {"0": status(68, 68)}}
    dump["entries"][0]["retired"], dump["entries"][1]["retired"] = False, True
    recent = recent_collectives(dump)
    assert [(c.seq, c.completed) for c in recent] == [(67, False), (68, True)]
    waiting = HangEvidence(0, "node0", 19, 1_795_748_150.0, 30.0, [], recent)
    assert waiting.inside is not None and waiting.inside.seq == 67
