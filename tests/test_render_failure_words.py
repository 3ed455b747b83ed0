"""A failed job's words, made in render/ from its facts (render/failure_words.py): each kind of cause's sentence, from
facts built here as launch/faults.py, lost_peers.py, script_ends.py and deadline.py find them (their tests assert the
facts: test_fault_attribution.py, test_mpi_job.py, test_script_end.py, test_user_traceback.py)."""

import signal

import pytest

from commprof.errors import RunFailed, SetupError
from commprof.render.failure_words import error_text, failure_text
from commprof.results.failure_facts import (
    Behind,
    Crashed,
    EndedEarly,
    GlooParted,
    Hung,
    Killed,
    Limit,
    LostHost,
    LostNode,
    Overdue,
    OwnError,
    Raised,
    RendezvousFailed,
    SetupProblem,
    Stuck,
    Vanished,
)
from commprof.results.hang import MPI_GROUP_DESC, EnteredCollective, HangEvidence, StackFrame

CRASHED_AT = "in export_chrome_trace (profiler/profiler.py:233)"
OOM = "the out-of-memory killer (the kernel killed {} for memory in this machine's memory cgroup during the run)"


@pytest.mark.parametrize(
    "fact, said",
    [
        (
            OwnError(1, "gpu-07", "RuntimeError: CUDA error: an illegal memory access", 1),
            "rank 1 on gpu-07 failed: RuntimeError: CUDA error: an illegal memory access",
        ),
        (Killed(0, "gpu-07", signal.SIGKILL), "rank 0 on gpu-07 was killed by signal 9 (SIGKILL)"),
        (
            Killed(1, "vm", signal.SIGSEGV, site=CRASHED_AT),
            f"rank 1 on vm was killed by signal 11 (SIGSEGV) {CRASHED_AT}",
        ),
        (
            Killed(1, "vm", signal.SIGABRT, backend_said="Connection closed by peer [10.0.0.2]:4312"),
            "rank 1 on vm was killed by signal 6 (SIGABRT): Connection closed by peer [10.0.0.2]:4312",
        ),
        (
            Killed(1, "vm", signal.SIGKILL, oom_kills=2),
            f"rank 1 on vm was killed by signal 9 (SIGKILL), by {OOM.format('2 processes')}",
        ),
        (Crashed(1, "vm", CRASHED_AT), f"rank 1 on vm crashed {CRASHED_AT}"),
        (
            Vanished(1, "vm", oom_kills=0),
            "rank 1 on vm ended without recording an error, an exit status commprof could see or a crash in its log; "
            "the kernel killed no process for memory",
        ),
        (
            Vanished(1, "vm", oom_kills=1),
            f"rank 1 on vm ended without recording an error, as a process killed by {OOM.format('1 process')} does",
        ),
    ],
    ids=["own_error", "killed", "killed_where", "killed_backend_said", "killed_oom", "crashed", "vanished", "oom"],
)
def test_a_rank_that_failed_on_its_own(fact, said):
    assert failure_text(fact) == said


def test_a_script_that_raised_points_at_its_traceback_shown_above():
    """The terminal shows the script's traceback above this line (launch/launcher.job_failed)."""
    assert failure_text(Raised(1, "vm")) == "rank 1 on vm raised the error above"
    assert failure_text(Raised(0, "vm", (1,))) == "rank 0 on vm raised the error above (rank 1 too)"


@pytest.mark.parametrize(
    "limit, crashes, said",
    [
        (Limit(10, "--timeout"), (), "(timed out after 10 s of --timeout)"),
        (Limit(15, "own"), (), "(timed out after 15 s of the process group's own timeout)"),
        (Limit(10), ((1, signal.SIGSEGV),), "(timed out after 10 s); rank 1 was then killed by signal 11 (SIGSEGV)"),
    ],
    ids=["--timeout", "own", "no_ones_then_killed"],
)
def test_a_rank_stuck_outside_the_collective_the_others_timed_out_in(limit, crashes, said):
    """The timeout that fired: --timeout's, the process group's own, or one the backend's words did not name."""
    stuck = Stuck((1,), (0,), "gpu-07", limit, crashes)
    assert failure_text(stuck) == f"rank 1 on gpu-07 stuck: never reached the collective that rank 0 waited for {said}"


FLIGHT_RECORDED = {5: "all_reduce", 6: "all_reduce", 7: "all_gather"}
LEVEL = {1: "all_reduce"}  # every rank entered its one collective


def dumped(rank: int, last: int, ops: dict[int, str] = FLIGHT_RECORDED) -> HangEvidence:
    """A rank as its Flight Recorder dump tells it: its collectives of the default group up to `last`, pending."""
    calls = [
        EnteredCollective("0", "default_pg", seq, op, [], [], seq < last, 0.0) for seq, op in ops.items() if seq <= last
    ]
    return HangEvidence(rank, "", None, 1_700_000_000.0, 0.0, [], calls)


@pytest.mark.parametrize(
    "hang, said",
    [
        (
            Behind((dumped(2, 6),), tuple(dumped(r, 7) for r in (0, 1, 3)), dumped(0, 7).collectives[-1]),
            "rank 2 is waiting in all_reduce #6 of the default group; ranks 0, 1, 3 wait in all_gather #7 of the "
            "default group",
        ),
        (
            Behind((), (dumped(0, 1, LEVEL), dumped(1, 1, LEVEL)), dumped(0, 1, LEVEL).collectives[0]),
            "ranks 0, 1 wait in all_reduce #1 of the default group; no rank of this node is behind: a rank on another "
            "node, or the link to it, is",
        ),
    ],
    ids=["a_rank_behind", "none_behind_here"],
)
def test_a_hang_the_flight_recorder_tells_and_the_timeout_the_others_hit(hang, said):
    hung = Hung(hang, "gpu-07", Limit(10, "--timeout"))
    assert failure_text(hung) == f"{said}; the others timed out after 10 s of --timeout on gpu-07"


SITE = StackFrame("/w/train.py", 3, "log_mean_loss", "dist.all_reduce(t)", True)
ITS_COLLECTIVE = "rank 0 on vm was killed by signal 6 (SIGABRT): its collective at train.py:3 in log_mean_loss "
ITS_COLLECTIVE += "(dist.all_reduce(t))"
NOT_KNOWN = "rank 0's tensors are not known (it wrote no account; Gloo aborted it on a piece of 272 bytes where it "
NOT_KNOWN += "expected 4)"
PEERS_FROM_LINE_3 = EnteredCollective(
    "0", "default_pg", 2, "all_reduce", [[68]], ["Float"], True, 1_700_000_000.0,
    StackFrame("/w/train.py", 3, "<module>", "", True),
)  # fmt: skip


@pytest.mark.parametrize(
    "case, kind, peer, said",
    [
        ("unknown", "either", {}, f"{NOT_KNOWN}: a collective that only some ranks run, or tensors that differ"),
        (
            "same_line",
            "tensors",
            {"peer": 1},
            f"rank 1 was at the same line; {NOT_KNOWN}: tensors that differ between the ranks",
        ),
        (
            "none_from_line",
            "only_some",
            {"peer": 1, "peer_calls": 3},
            f"none of rank 1's last 3 collectives was called from that line; {NOT_KNOWN}: a collective that only some "
            "ranks run",
        ),
        (
            "theirs",
            "tensors",
            {"peer": 1, "theirs": PEERS_FROM_LINE_3},
            "rank 1's all_reduce #2 of the default group from the same line had 1 tensor of 68 Float, 272 B; "
            f"{NOT_KNOWN}: tensors that differ between the ranks",
        ),
    ],
)
def test_a_rank_gloo_aborted_on_a_piece_of_another_size(case, kind, peer, said):
    """Rank 0 left no account: what its peer's line or account says, and Gloo's piece named as such."""
    parted = GlooParted(0, 272, 4, SITE, case, kind, mine=None, mine_unknown="no_account", **peer)
    assert failure_text(Killed(0, "vm", signal.SIGABRT, parted=parted)) == f"{ITS_COLLECTIVE}: {said}"


WAITING = HangEvidence(0, "node0", 19, 1_700_000_030.0, 30.0, [], [
    EnteredCollective("0", "default_pg", 79, "all_reduce", [[7_357_450]], ["Float"], False, 1_700_000_001.0)
])  # fmt: skip
WATCHDOG_WAITING = HangEvidence(3, "gpu003", 40, 1_700_000_700.0, 600.0, [], [
    EnteredCollective("0", "default_pg", 31, "all_reduce", [[1_048_576]], [], False, 1_700_000_090.0)
])  # fmt: skip
LAST_WAS = HangEvidence(  # its collective failed: it waits in none
    1, "node1", 5, 1_700_000_030.0, 0.0, [StackFrame("/w/train.py", 30, "main", "loss.backward()", True)],
    [EnteredCollective("0", "default_pg", 22, "all_reduce", [[68]], ["Float"], True, 1_700_000_001.0)],
)  # fmt: skip
WATCHDOG = (
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, OpType=ALLREDUCE, NumelIn=1048576, "
    "Timeout(ms)=600000) ran for 600088 milliseconds"
)


@pytest.mark.parametrize(
    "lost, said",
    [
        (
            LostHost(
                "10.231.0.1",
                (LostNode("10.231.0.2", (1,)),),
                "Connection closed by peer [10.231.0.2]:13471",
                None,
                WAITING,
            ),
            "10.231.0.1 lost 10.231.0.2 (rank 1): the connection to it went (Connection closed by peer "
            "[10.231.0.2]:13471); rank 0 has waited 29 s in all_reduce #79 of the default group (1 tensor of 7,357,450 "
            "Float, 28.07 MiB)",
        ),
        (
            LostHost("gpu003", (LostNode("gpu004", tuple(range(8, 16))),), WATCHDOG, 600.088, WATCHDOG_WAITING),
            "gpu003 lost gpu004 (ranks 8, 9, 10, 11, 12, 13, 14, 15): nothing came from it for 600.088 s: a link or a "
            f"host went ({WATCHDOG}); rank 3 has waited 610 s in all_reduce #31 of the default group (1,048,576 "
            "elements)",
        ),
        (
            LostHost(
                "10.0.0.2", (LostNode("localhost", (0, 1)),), "Read error [127.0.0.1]:51080: Connection reset by peer"
            ),
            "10.0.0.2 lost localhost (ranks 0, 1): the connection to it went (Read error [127.0.0.1]:51080: Connection "
            "reset by peer)",
        ),
        (
            LostHost("node1", (LostNode("node0", (0,), store=True),), "Timed out", 15, LAST_WAS),
            "node1 lost node0 (rank 0, the rendezvous store's host): nothing came from it for 15 s: a link or a host "
            "went (Timed out); rank 1's last collective was all_reduce #22 of the default group (1 tensor of 68 "
            "Float, 272 B) at train.py:30 in main (loss.backward())",
        ),
    ],
    ids=["closed_while_waiting", "silent_while_waiting", "ranks_of_a_node_closed", "the_store_host_silent"],
)
def test_a_host_this_node_lost(lost, said):
    assert failure_text(lost) == said


def test_a_rank_that_finished_its_script_while_another_waited_for_it():
    site = StackFrame("/w/train.py", 60, "<module>", "loss.backward()", True)
    waiting = "rank 0 waits in all_reduce #31 of the default group after step 25"
    ended = EndedEarly((1,), "vm", 25, 0, waiting, site, "Connection closed by peer")
    assert failure_text(ended) == (
        "rank 1 on vm finished its script after 25 steps (exit 0) while rank 0 waits in all_reduce #31 of the "
        "default group after step 25 at train.py:60 in <module> (loss.backward()), and then failed: Connection "
        "closed by peer; the ranks ran different numbers of steps: give every rank as many batches (equal shards, "
        "e.g. DistributedSampler(..., drop_last=True)) or wrap the loop in DDP's Join context manager "
        "(torch.distributed.algorithms.join.Join)"
    )


def test_a_wait_in_an_mpi_collective_commprof_stopped():
    """MPI has no timeout of its own: commprof's deadline (--timeout and its grace) stopped the job."""
    inside = EnteredCollective("COMM_WORLD", MPI_GROUP_DESC, 7, "all_reduce", [[33_088]], ["Float"], False, 1_000.0)
    waiting = HangEvidence(0, "vm", 3, 1_000.0 + 315, 315.0, [], [inside])
    overdue = Overdue(Behind((), (waiting,), inside), "vm", timeout_s=300, grace_s=15, mpi=True)
    assert failure_text(overdue) == (
        "rank 0 has waited 315 s in all_reduce #7 of MPI's COMM_WORLD (mpi4py) (1 tensor of 33,088 Float, 129.25 KiB); "
        "no rank of this node is behind: a rank on another node, or the link to it, is; a collective waited over "
        "--timeout 300 s and 15 s of grace on vm (MPI has no timeout of its own): commprof stopped the job"
    )


@pytest.mark.parametrize(
    "problem, said",
    [
        (
            SetupProblem("host_name", "nosuchhost", one_node=True),
            "this host's name 'nosuchhost' does not resolve: add it to /etc/hosts, or pass --local-addr with this "
            "host's address (127.0.0.1 on one node)",
        ),
        (
            SetupProblem("host_name", "nosuchhost"),
            "this host's name 'nosuchhost' does not resolve: add it to /etc/hosts, or pass --local-addr with this "
            "host's address (the one the other nodes reach)",
        ),
        (
            SetupProblem("local_addr_foreign", "node0", ("10.0.0.1",)),
            "--local-addr node0 is not an address of this host (node0 is 10.0.0.1): pass one of its own addresses, "
            "the one the other nodes reach (`ip -brief address` lists them)",
        ),
        (
            SetupProblem("local_addr", "elsewhere"),
            "--local-addr elsewhere does not resolve: pass this host's address, the one the other nodes reach",
        ),
        (
            SetupProblem("endpoint_unreachable", "node0:29400", why="no route to host"),
            "rendezvous endpoint node0:29400 cannot be reached from this node (no route to host): check that node0 "
            "is node 0's address on a network this node shares, and that no firewall drops port 29400",
        ),
        (
            SetupProblem("endpoint_name", "nowhere:29400"),
            "rendezvous endpoint nowhere:29400: the host 'nowhere' does not resolve on this node; pass node 0's "
            "address in --rdzv-endpoint, or add the name to /etc/hosts",
        ),
        (
            SetupProblem("endpoint_not_store", "node0:29400"),
            "rendezvous endpoint node0:29400: port 29400 is in use by a program that is not a c10d store; choose "
            "another port for --rdzv-endpoint",
        ),
        (
            SetupProblem("gloo_interface", "ib0", ("ib0",), ("lo", "eth0")),
            "GLOO_SOCKET_IFNAME=ib0: this host has no interface ib0 (it has lo, eth0); set it to the interface on "
            "the network the other nodes reach, or unset it",
        ),
        (
            SetupProblem("gloo_loopback", "node1", ("127.0.1.1",), ("lo", "eth0")),
            "Gloo would bind to loopback, which the other nodes cannot reach (this host's name 'node1' resolves to "
            "127.0.1.1): set GLOO_SOCKET_IFNAME to the interface the other nodes reach (this host has lo, eth0)",
        ),
        (
            SetupProblem("gloo_interface_loopback", "lo", interfaces=("lo", "eth0")),
            "GLOO_SOCKET_IFNAME=lo is loopback, which the other nodes cannot reach: set it to the interface on their "
            "network (this host has lo, eth0)",
        ),
        (
            SetupProblem("peer_name", "nosuchhost:33743"),
            "torch's launcher could not reach nosuchhost:33743: the name 'nosuchhost' does not resolve on this node; "
            "add it to /etc/hosts, or pass that node's --local-addr with its address",
        ),
        (
            RendezvousFailed("timeout", "node0:29400", 30, 2, "r"),
            "rendezvous at node0:29400 timed out after 30 s: not all 2 nodes joined run 'r' (start commprof run with "
            "the same --nodes, --run-id and --rdzv-endpoint on every node)",
        ),
        (
            RendezvousFailed("no_store", "node0:29400", 30),
            "rendezvous at node0:29400 failed: no c10d store answered there within 30 s",
        ),
    ],
)
def test_a_set_up_problem_names_its_cause_and_its_fix(problem, said):
    assert failure_text(problem) == said
    raised = SetupError(problem) if isinstance(problem, SetupProblem) else RunFailed(problem)  # before, or at, launch
    assert error_text(raised) == said
