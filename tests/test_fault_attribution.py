"""Who is to blame when a job fails, decided from what each rank left behind: error records, exit signals,
NCCL's watchdog line, Flight Recorder dumps (hand-made here as torch writes them)."""

import dataclasses
import pickle
import signal

import pytest

from commprof.launch.faults import (
    RankOutcome,
    backend_said,
    collective_parted,
    crash_site,
    fatal_signal,
    root_cause,
)
from commprof.launch.flight_recorder import environment, read_dumps
from commprof.launch.hang_evidence import describe_hang
from commprof.launch.oom import OomWatch, oom_kills
from commprof.results.failure_facts import (
    Behind,
    Crashed,
    GlooParted,
    Hung,
    Killed,
    Limit,
    LostHost,
    LostNode,
    OwnError,
    Stuck,
    Vanished,
)
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame
from commprof.worker.rank import STOPPED_MESSAGE, RankStopped, error_to_record
from tests.conftest import REPO

WATCHDOG = (
    "[PG ID 0 PG GUID 0(default_pg) Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
    "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=10000) ran for 10012 milliseconds "
    "before timing out."
)


def test_a_rank_killed_after_another_failed_is_not_the_cause():
    """Rank 1 raised; rank 0, blocked on the GPU, outlived the launcher's grace period and was SIGKILLed 15 s
    later: rank 1's error is the cause."""
    illegal_access = "RuntimeError: CUDA error: an illegal memory access"  # rank 1's error, as it recorded it
    outcomes = [
        RankOutcome(0, "", -signal.SIGKILL, timestamp=1_700_000_015),
        RankOutcome(1, illegal_access, 1, timestamp=1_700_000_000),
    ]
    assert root_cause(outcomes, "gpu-07") == OwnError(1, "gpu-07", illegal_access, 1)


def test_a_rank_killed_first_is_the_cause():
    outcomes = [
        RankOutcome(0, "", -signal.SIGKILL, timestamp=1_700_000_000),
        RankOutcome(1, "RuntimeError: something after", 1, timestamp=1_700_000_003),
    ]
    assert root_cause(outcomes, "gpu-07") == Killed(0, "gpu-07", signal.SIGKILL)


def test_the_watchdog_abort_is_a_timeout_and_the_stuck_rank_is_named():
    outcomes = [
        RankOutcome(0, WATCHDOG, -signal.SIGABRT, timestamp=1_700_000_010),
        RankOutcome(1, STOPPED_MESSAGE, 1, timestamp=1_700_000_011),
    ]
    assert root_cause(outcomes, "gpu-07", 10) == Stuck((1,), (0,), "gpu-07", Limit(10, "--timeout"))


def test_a_rank_the_launcher_stopped_is_never_the_cause():
    """Rank 1 failed; the launcher's SIGTERM reached rank 0 in the same second, which torch recorded as an
    error of its own ("Signal 15 (SIGTERM) received by PID ..."): rank 1 is the cause."""
    own = "RuntimeError: the script never initialized torch.distributed"  # rank 1's error, as it recorded it
    outcomes = [
        RankOutcome(0, "SignalException: Signal 15 (SIGTERM) received by PID 12360", 1, timestamp=1_700_000_000),
        RankOutcome(1, own, 1, timestamp=1_700_000_000),
    ]
    assert root_cause(outcomes, "vm") == OwnError(1, "vm", own, 1)


def test_a_stuck_rank_that_crashes_as_its_peers_leave_is_still_the_stuck_rank():
    """Rank 1 sleeps outside any collective; rank 0's all-reduce times out after 10 s and it leaves; Gloo then
    crashes rank 1 (SIGSEGV) when its peer's sockets close. The crash came after the timeout: rank 1 was stuck."""
    timed_out = "RuntimeError: [../gloo/transport/tcp/pair.cc:534] Read error [127.0.0.1]:2345: Timed out"
    outcomes = [
        RankOutcome(0, timed_out, 1, timestamp=1_700_000_010),
        RankOutcome(1, "", -signal.SIGSEGV, timestamp=1_700_000_010),
    ]
    # Gloo's words name no timeout: --timeout's, said as no one's
    assert root_cause(outcomes, "vm", 10) == Stuck((1,), (0,), "vm", Limit(10), ((1, signal.SIGSEGV),))
    crashed_before = [outcomes[0], RankOutcome(1, "", -signal.SIGSEGV, timestamp=1_700_000_004)]
    assert root_cause(crashed_before, "vm", 10) == Killed(1, "vm", signal.SIGSEGV)


def test_a_stop_while_unwinding_from_a_timeout_records_the_timeout():
    """Rank 0 times out; closing its process group crashes the stuck rank 1, and the launcher stops rank 0
    while it is still unwinding. Rank 0's record must say it timed out, or rank 1's crash looks like the cause."""
    timed_out = RuntimeError("[gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 10000ms for recv")
    try:
        try:
            raise timed_out
        finally:
            raise RankStopped(STOPPED_MESSAGE)
    except RankStopped as stopped:
        assert error_to_record(stopped) is timed_out
    plain_stop = RankStopped(STOPPED_MESSAGE)
    assert error_to_record(plain_stop) is plain_stop


CRASH_LOG = """USDT: profiler_start
Fatal Python error: Segmentation fault

Thread 0x00007fe815be16c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 982 in run

Current thread 0x00007fe816a51b80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/profiler/profiler.py", line 233 in export_chrome_trace
  File "/work/train.py", line 6 in <module>
"""

NO_PYTHON_FRAME = (
    "Fatal Python error: Aborted\n\nCurrent thread 0x00007f (most recent call first):\n  <no Python frame>\n"
)


def test_a_crashed_rank_is_named_with_where_it_crashed():
    """The workers enable faulthandler; the crashing thread's innermost frame says where."""
    assert crash_site(CRASH_LOG) == "in export_chrome_trace (profiler/profiler.py:233)"
    assert crash_site(NO_PYTHON_FRAME) == "in a thread running no Python code"
    assert crash_site("Traceback (most recent call last):\n") == ""
    outcome = RankOutcome(1, "", -signal.SIGSEGV, 1_700_000_000, crash_site(CRASH_LOG))
    where = "in export_chrome_trace (profiler/profiler.py:233)"
    assert root_cause([outcome], "vm") == Killed(1, "vm", signal.SIGSEGV, site=where)
    unreported = RankOutcome(1, "", None, crash_site=crash_site(CRASH_LOG))  # torch found another rank's exit first
    assert root_cause([unreported], "vm") == Crashed(1, "vm", where)


def dump(last_enqueued: int, names: dict[int, str]) -> dict:
    entries = [
        {
            "record_id": seq,
            "pg_id": 0,
            "process_group": ("0", "default_pg"),
            "collective_seq_id": seq,
            "p2p_seq_id": 0,
            "op_id": seq,
            "profiling_name": name,
            "state": "completed",
            "is_p2p": False,
        }
        for seq, name in names.items()
        if seq <= last_enqueued
    ]
    return {
        "version": "2.4",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
        "pg_status": {
            "0": {
                "last_enqueued_collective": last_enqueued,
                "last_started_collective": last_enqueued,
                "last_completed_collective": last_enqueued - 1,
            }
        },
        "entries": entries,
    }


def test_flight_recorder_names_the_rank_that_never_arrived(tmp_path):
    names = {5: "nccl:all_reduce", 6: "nccl:all_reduce", 7: "nccl:all_gather"}
    for rank, last in ((0, 7), (1, 7), (2, 6), (3, 7)):
        (tmp_path / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(dump(last, names)))
    (tmp_path / "nccl_trace_rank_9").write_bytes(b"not a pickle")  # unreadable dumps are ignored
    hang = describe_hang(read_dumps(tmp_path))
    assert isinstance(hang, Behind) and hang.ahead is not None
    assert [(e.rank, e.inside.op, e.inside.seq) for e in hang.behind if e.inside] == [(2, "all_reduce", 6)]
    assert [e.rank for e in hang.waiting] == [0, 1, 3]
    assert (hang.ahead.op, hang.ahead.seq, hang.ahead.group_desc) == ("all_gather", 7, "default_pg")
    outcomes = [RankOutcome(r, WATCHDOG, -signal.SIGABRT, timestamp=1_700_000_010) for r in (0, 1, 3)]
    outcomes.append(RankOutcome(2, STOPPED_MESSAGE, 1, timestamp=1_700_000_011))
    assert root_cause(outcomes, "gpu-07", 10, hang) == Hung(hang, "gpu-07", Limit(10, "--timeout"))


def test_flight_recorder_with_every_rank_level_names_no_one_here(tmp_path):
    names = {1: "nccl:all_reduce"}
    for rank in (0, 1):
        (tmp_path / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(dump(1, names)))
    hang = describe_hang(read_dumps(tmp_path))
    assert isinstance(hang, Behind) and hang.ahead is not None
    assert hang.behind == () and [e.rank for e in hang.waiting] == [0, 1]
    assert (hang.ahead.op, hang.ahead.seq, hang.ahead.group_desc) == ("all_reduce", 1, "default_pg")
    assert read_dumps(tmp_path / "none") == {} and describe_hang({}) is None


def test_flight_recorder_dumps_go_where_commprof_reads_them(tmp_path):
    variables = environment(tmp_path)
    assert variables["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1" and int(variables["TORCH_FR_BUFFER_SIZE"]) > 0
    assert (
        variables["TORCH_FR_DUMP_TEMP_FILE"]
        == variables["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"]
        == str(tmp_path / "nccl_trace_rank_")
    )


class RunsCode:
    def __reduce__(self):
        return (print, ("this ran",))


def test_a_dump_is_read_as_data_and_a_pickle_that_would_run_code_is_refused(tmp_path, capsys):
    """Dumps are pickles: plain containers and torch's typed-list tags load; anything naming another callable is
    refused before it runs (nothing is printed), and read_dumps leaves that dump out."""
    from commprof.trace.plain_pickle import plain_loads

    typed = b"\x80\x02ctorch.jit._pickle\nbuild_intlist\nq\x00]q\x01(K\x01K\x02e\x85q\x02Rq\x03."
    assert plain_loads(typed) == [1, 2]
    plain = {"entries": [{"collective_seq_id": 3, "input_sizes": [[4, 2]], "state": "scheduled"}], "v": (1.5, None)}
    assert plain_loads(pickle.dumps(plain)) == plain
    with pytest.raises(pickle.UnpicklingError, match="builtins.print: only plain data is read"):
        plain_loads(pickle.dumps(RunsCode()))
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(RunsCode()))
    (tmp_path / "nccl_trace_rank_1").write_bytes(pickle.dumps(plain))
    assert list(read_dumps(tmp_path)) == [1] and "this ran" not in capsys.readouterr().out
    (entered,) = read_dumps(tmp_path)[1].collectives
    assert (entered.seq, entered.sizes, entered.completed) == (3, [[4, 2]], False)


def test_a_real_gloo_dump_of_torch_2_13_reads_as_data():
    """tests/data/flight_recorder/make_dump.py wrote it: one rank's all_reduce of 4 floats, then a barrier."""
    from commprof.trace.plain_pickle import plain_loads

    dump = plain_loads((REPO / "tests" / "data" / "flight_recorder" / "gloo_rank0_torch2.13.pickle").read_bytes())
    first = dump["entries"][0]
    assert (first["profiling_name"], first["input_sizes"]) == ("gloo:all_reduce", [[4]])
    assert first["input_dtypes"] == ["Float"]
    assert first["collective_seq_id"] == 1 and first["process_group"] == ("0", "default_pg")


# what Gloo's enforce says, after the place it names
GLOO_ENFORCE = (
    "op.preamble.length <= op.nbytes. 272 vs 4. Received data size doesn't match expected size. Is there a "
    "distributed collective mismatch in your code? 272 vs 4"
)
GLOO_ABORT_LOG = f"""terminate called after throwing an instance of 'gloo::EnforceNotMet'
  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] {GLOO_ENFORCE}
Fatal Python error: Aborted

Thread 0x00007fac2fe146c0 (most recent call first):
  File "/work/main/commprof/instrument/hang_watch.py", line 142 in _watch
  File "/usr/lib/python3.11/threading.py", line 982 in run

Thread 0x00007fac4fa6db80 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252 in all_reduce
  File "/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "SCRIPT", line 3 in log_mean_loss
  File "SCRIPT", line 6 in <module>
  File "/work/main/commprof/worker/script.py", line 266 in run_script
  File "<frozen runpy>", line 198 in _run_module_as_main

Extension modules: numpy._core._multiarray_umath, torch._C
"""


def test_a_rank_gloo_aborted_on_a_collective_of_another_size_is_named_with_its_line(tmp_path):
    """The log of rank 0 of a script whose rank 0 alone all-reduces one float (torch 2.13, Gloo): Gloo's enforce,
    then faulthandler's stacks; the main thread's own frame is the line that called the collective. The peer's
    recorded traceback says where it was: another line (a collective only rank 0 runs) or the same."""
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\ndef log_mean_loss(t):\n    dist.all_reduce(t)\n\n\nlog()\n")
    log = GLOO_ABORT_LOG.replace("SCRIPT", str(script))
    parted = collective_parted(log)
    assert (parted.sent, parted.expected) == (272, 4)
    site = parted.site
    assert (site.file, site.line, site.function, site.code) == (str(script), 3, "log_mean_loss", "dist.all_reduce(t)")

    def aborted_at_line_3(case, kind, **peer) -> Killed:
        """Rank 0 killed by SIGABRT, its collective the one at line 3; Gloo's numbers are those of a piece of the
        transfer, not the tensors': rank 0 wrote no account of its own, so its tensors are not known."""
        said = GlooParted(0, 272, 4, site, case, kind, mine=None, mine_unknown="no_account", **peer)
        return Killed(0, "vm", signal.SIGABRT, parted=said)

    aborted = RankOutcome(0, "", -signal.SIGABRT, 1_700_000_000, crash_site(log), parted=parted)
    ambiguous = aborted_at_line_3("unknown", "either")  # a collective that only some ranks run, or other tensors
    assert root_cause([aborted], "vm") == ambiguous

    def peer_at(line: int) -> RankOutcome:
        traceback = f'Traceback (most recent call last):\n  File "{script}", line {line}, in <module>\n    x\n'
        return RankOutcome(1, "Connection reset by peer", 1, 1_700_000_001, traceback=traceback)

    # the peer's line alone: the same line is the same call; another line proves nothing (it may have passed it)
    assert root_cause([aborted, peer_at(6)], "vm") == ambiguous
    assert root_cause([aborted, peer_at(3)], "vm") == aborted_at_line_3("same_line", "tensors", peer=1)

    def peer_entered(*lines: int) -> RankOutcome:
        """The peer's account, written as it failed: its last collectives, each with the line that called it."""
        entered = [
            EnteredCollective("0", "default_pg", seq, "all_reduce", [[68]], ["Float"], True, 1_700_000_000.0, site)
            for seq, line in enumerate(lines, 1)
            for site in [StackFrame(str(script), line, "<module>", "", True)]
        ]
        account = HangEvidence(1, "vm", 3, 1_700_000_001.0, 0.0, [], entered)
        return dataclasses.replace(peer_at(6), account=account)

    assert root_cause([aborted, peer_entered(6, 6, 6)], "vm") == aborted_at_line_3(
        "none_from_line", "only_some", peer=1, peer_calls=3
    )
    from_line_3 = EnteredCollective(
        "0", "default_pg", 2, "all_reduce", [[68]], ["Float"], True, 1_700_000_000.0,
        StackFrame(str(script), 3, "<module>", "", True),
    )  # fmt: skip
    assert root_cause([aborted, peer_entered(6, 3, 6)], "vm") == aborted_at_line_3(
        "theirs", "tensors", peer=1, theirs=from_line_3
    )
    assert collective_parted(CRASH_LOG) is None


def test_a_rank_that_left_no_error_is_told_from_its_log_and_the_kernels_count_never_guessed(tmp_path):
    """Torch reports one failed rank per node: another's end is told from what it left. faulthandler's first line
    names the signal, the C++ exception's what() what the backend said; out of memory only when the kernel counted a
    kill for memory during the run; with nothing at all, the line says so and guesses no cause."""
    log = GLOO_ABORT_LOG.replace("SCRIPT", str(tmp_path / "train.py"))
    assert fatal_signal(log) == signal.SIGABRT and fatal_signal(CRASH_LOG) == signal.SIGSEGV
    assert fatal_signal("Traceback (most recent call last):\n") is None
    assert backend_said(log) == GLOO_ENFORCE  # Gloo's words, without the place in its source
    said = "Connection closed by peer [10.0.0.2]:4312"
    aborted = RankOutcome(1, "", -signal.SIGABRT, backend_said=said)
    assert root_cause([aborted], "vm") == Killed(1, "vm", signal.SIGABRT, backend_said=said)
    vanished = RankOutcome(1, "", None)
    assert root_cause([vanished], "vm") == Vanished(1, "vm", oom_kills=0)
    assert root_cause([vanished], "vm", oom_kills=1) == Vanished(1, "vm", oom_kills=1)
    killed = RankOutcome(1, "", -signal.SIGKILL, 1_700_000_000)
    assert root_cause([killed], "vm") == Killed(1, "vm", signal.SIGKILL, oom_kills=0)
    assert root_cause([killed], "vm", oom_kills=2) == Killed(1, "vm", signal.SIGKILL, oom_kills=2)
    # a kill for memory is no cause of a rank another signal ended
    assert root_cause([aborted], "vm", oom_kills=2) == Killed(1, "vm", signal.SIGABRT, backend_said=said)


def test_the_out_of_memory_count_is_read_from_the_process_memory_cgroup(tmp_path):
    """cgroup v2 (memory.events) and v1 (memory.oom_control), each at the path /proc/self/cgroup names."""
    v2, v1 = tmp_path / "v2", tmp_path / "v1"
    (v2 / "job" / "step").mkdir(parents=True)
    (v2 / "job" / "step" / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    (v2 / "self").write_text("0::/job/step\n")
    assert oom_kills(v2 / "self", v2) == 2
    (v1 / "memory" / "slurm" / "job7").mkdir(parents=True)
    (v1 / "memory" / "slurm" / "job7" / "memory.oom_control").write_text(
        "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n"
    )
    (v1 / "self").write_text("4:memory:/slurm/job7\n3:cpu:/\n0::/\n")
    assert oom_kills(v1 / "self", v1) == 5
    (v1 / "nothing").write_text("4:cpu:/x\n")
    assert oom_kills(v1 / "nothing", v1 / "nowhere") is None and oom_kills(tmp_path / "absent", v1) is None
    assert OomWatch().killed() == 0  # this machine's own count, read twice: nobody was killed in between


def test_a_lost_host_is_named_with_its_ranks_how_the_connection_went_and_where_this_node_waited():
    """Two hosts of one rank each, seen from node0. Gloo names the peer whose connection closed: its address is
    node1's. A receive that timed out names none: when every rank of this node waits in a collective, the other hosts
    are the ones it heard nothing from. Nothing of the kind on one node, or with a rank of this node behind."""
    from commprof.launch.lost_peers import FailedRank, JobNodes, lost_peers

    nodes = JobNodes({0: "10.231.0.1", 1: "10.231.0.2"}, this_node=0, per_node=1)
    waiting = HangEvidence(0, "node0", 19, 1_700_000_030.0, 30.0, [], [
        EnteredCollective("0", "default_pg", 79, "all_reduce", [[7_357_450]], ["Float"], False, 1_700_000_001.0)
    ])  # fmt: skip
    node1 = (LostNode("10.231.0.2", (1,), store=False),)
    closed = "RuntimeError: [/gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.231.0.2]:13471."
    assert lost_peers([FailedRank(0, closed, waiting)], nodes) == LostHost(
        "10.231.0.1", node1, "Connection closed by peer [10.231.0.2]:13471", silent_s=None, waiting=waiting
    )
    recv_timed_out = "Timed out waiting 30000ms for recv operation to complete"  # Gloo's words, after its place
    timed_out = f"RuntimeError: [/gloo/unbound_buffer.cc:78] {recv_timed_out}"
    assert lost_peers([FailedRank(0, timed_out, waiting)], nodes) == LostHost(
        "10.231.0.1", node1, recv_timed_out, silent_s=30, waiting=waiting
    )
    closure = "RuntimeError: Application timeout caused pair closure"  # Gloo's other words for it (torch 2.13)
    assert lost_peers([FailedRank(0, closure, waiting)], nodes, timeout_s=15) == LostHost(
        "10.231.0.1", node1, "Application timeout caused pair closure", silent_s=15, waiting=waiting
    )
    behind = HangEvidence(0, "node0", 19, 1_700_000_030.0, 30.0, [], [])  # outside any collective: it is behind
    assert lost_peers([FailedRank(0, timed_out, behind)], nodes) is None
    assert lost_peers([FailedRank(0, closed, waiting)], JobNodes({0: "vm"}, 0, 2)) is None
    four = JobNodes({0: "localhost", 1: "10.0.0.2", 2: "10.0.0.3"}, this_node=1, per_node=2)
    read_error = "Read error [127.0.0.1]:51080: Connection reset by peer"  # said without Gloo's place and full stop
    reset = f"RuntimeError: [pair.cc:537] {read_error}."
    assert lost_peers([FailedRank(2, reset, None), FailedRank(3, timed_out, None)], four) == LostHost(
        "10.0.0.2", (LostNode("localhost", (0, 1)),), read_error
    )


def test_a_lost_host_is_named_from_nccls_warnings_in_the_ranks_log():
    """NCCL's socket and InfiniBand transports write the peer in their WARN lines (forms from NCCL's issue tracker:
    a host name with or without its domain, or an address); the rank's error itself names none."""
    from commprof.launch.lost_peers import FailedRank, JobNodes, lost_peers

    nodes = JobNodes({0: "gpu003.cluster", 1: "gpu004.cluster", 2: "10.0.35.1"}, this_node=0, per_node=8)
    error = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, remote process exited"

    def lost_from(log: str) -> LostHost | None:
        return lost_peers([FailedRank(3, error, None, log)], nodes)

    # each said as NCCL's WARN line says it, after the line's prefix (and without the InfiniBand details)
    closed = "Connection closed by remote peer gpu004.ds-a4-r02.abc.com<55693>"
    socket_warning = f"gpu003:2200689:2200706 [3] misc/socket.cc:49 NCCL WARN socketProgress: {closed}\n"
    assert lost_from(socket_warning) == LostHost(
        "gpu003.cluster", (LostNode("gpu004.cluster", (8, 9, 10, 11, 12, 13, 14, 15)),), closed
    )
    completion = "Got completion from peer 10.0.35.1<49189> with error 4"
    infiniband = f"kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : {completion}"
    infiniband += ", opcode 5327, len 5327, vendor err 81 (Send)\n"
    assert lost_from(infiniband) == LostHost(
        "gpu003.cluster", (LostNode("10.0.35.1", (16, 17, 18, 19, 20, 21, 22, 23)),), completion
    )
    assert lost_from("NCCL INFO Connected all rings\n") is None
    # a peer that went silent: every rank of this node waits, and NCCL's watchdog timed the collective out
    waiting = HangEvidence(3, "gpu003", 40, 1_700_000_700.0, 600.0, [], [
        EnteredCollective("0", "default_pg", 31, "all_reduce", [[1_048_576]], [], False, 1_700_000_090.0)
    ])  # fmt: skip
    caught = (  # said without the log line's prefix and its "before timing out."
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, OpType=ALLREDUCE, NumelIn=1048576, "
        "Timeout(ms)=600000) ran for 600088 milliseconds"
    )
    watchdog = f"[rank3]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 3] {caught} before timing out."
    assert lost_peers([FailedRank(3, watchdog, waiting)], JobNodes({0: "gpu003", 1: "gpu004"}, 0, 8)) == LostHost(
        "gpu003", (LostNode("gpu004", (8, 9, 10, 11, 12, 13, 14, 15)),), caught, silent_s=600.088, waiting=waiting
    )
