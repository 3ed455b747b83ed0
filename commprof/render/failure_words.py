"""A failed job's facts (results/failure_facts.py) in one line: the rank to blame, on which host, and why.

"rank 1 on node2 was killed by signal 9 (SIGKILL), by the out-of-memory killer (...)"; "rank 1 on node1 stuck: never
reached the collective that rank 0 waited for (timed out after 15 s of --timeout)"."""

from __future__ import annotations

import signal

from commprof.errors import CommprofError, RunFailed, SetupError
from commprof.render.hang_words import collective_text, hang_text, site_text, tensors_text, waiting_text
from commprof.results.failure_facts import (
    Crashed,
    EndedEarly,
    Failure,
    GlooParted,
    Hung,
    Killed,
    Limit,
    LostHost,
    LostNode,
    MpirunFailed,
    Overdue,
    OwnError,
    PartedKind,
    Raised,
    RemoteWait,
    RendezvousFailed,
    SetupProblem,
    Stuck,
    Unknown,
    Unrecorded,
    Vanished,
)
from commprof.results.hang import EnteredCollective, StackFrame

ENDED_EARLY_ADVICE = (
    "the ranks ran different numbers of steps: give every rank as many batches (equal shards, e.g. "
    "DistributedSampler(..., drop_last=True)) or wrap the loop in DDP's Join context manager "
    "(torch.distributed.algorithms.join.Join)"
)
DIFFERENT_TENSORS = "tensors that differ between the ranks"
ONLY_SOME = "a collective that only some ranks run"
PARTED_KIND: dict[PartedKind, str] = {
    "op": "different collectives at the same position",
    "only_some_met": f"{ONLY_SOME}, met by another",
    "tensors": DIFFERENT_TENSORS,
    "only_some": ONLY_SOME,
    "either": f"{ONLY_SOME}, or tensors that differ",
}


def failure_text(failure: Failure | str) -> str:
    """The one line of a failure; a setup problem's line (a str) as it is."""
    if isinstance(failure, str):
        return failure
    match failure:
        case SetupProblem():
            return setup_text(failure)
        case RendezvousFailed("timeout", endpoint, seconds, nodes, run_id):
            return (
                f"rendezvous at {endpoint} timed out after {seconds:g} s: not all {nodes} nodes joined run {run_id!r} "
                "(start commprof run with the same --nodes, --run-id and --rdzv-endpoint on every node)"
            )
        case RendezvousFailed("no_store", endpoint, seconds):
            return f"rendezvous at {endpoint} failed: no c10d store answered there within {seconds:g} s"
        case RendezvousFailed(said=said):
            return f"launch failed: {said}"
        case OwnError(rank, host, message, exitcode):
            return f"rank {rank} on {host} failed: {message or f'exit code {exitcode}'}"
        case Crashed(rank, host, site):
            return f"rank {rank} on {host} crashed {site}"
        case Vanished(rank, host, oom_kills) if oom_kills:
            return (
                f"rank {rank} on {host} ended without recording an error, as a process killed by {_oom(oom_kills)} does"
            )
        case Vanished(rank, host):
            return (
                f"rank {rank} on {host} ended without recording an error, an exit status commprof could see or a "
                "crash in its log; the kernel killed no process for memory"
            )
        case Killed():
            return _killed(failure)
        case LostHost():
            return _lost(failure)
        case Hung(hang, host, limit):
            return f"{hang_text(hang)}; the others timed out{limit_text(limit)} on {host}"
        case Stuck(stuck, waiting, host, limit, crashes):
            then = "".join(f"; rank {rank} was then killed by signal {signal_name(number)}" for rank, number in crashes)
            return (
                f"{_ranks(stuck)} on {host} stuck: never reached the collective that {_ranks(waiting)} waited for "
                f"(timed out{limit_text(limit)}){then}"
            )
        case RemoteWait(waiting, host, message, limit):
            return (
                f"{_ranks(waiting)} on {host}: a collective timed out{limit_text(limit)} waiting for a rank on another "
                f"node ({message})"
            )
        case Unrecorded(host):
            return f"the job failed on {host} without a recorded error"
        case EndedEarly():
            return _ended_early(failure)
        case Overdue():
            return _overdue(failure)
        case Raised(rank, host, also):
            return f"rank {rank} on {host} raised the error above" + (f" ({_ranks(also)} too)" if also else "")
        case MpirunFailed(code, said, limit_s) if limit_s is not None:
            return f"mpirun did not finish within {limit_s:g} s"
        case MpirunFailed(code, said):
            return f"mpirun failed (exit code {code}): {said}"
    raise TypeError(f"not a failure: {failure!r}")


GLOO_IFNAME = "GLOO_SOCKET_IFNAME"


def setup_text(setup: SetupProblem) -> str:
    """A set-up problem of this node, with its fix."""
    name, found, interfaces = setup.name, ", ".join(setup.found), ", ".join(setup.interfaces)
    if setup.problem == "host_name":
        address = "127.0.0.1 on one node" if setup.one_node else "the one the other nodes reach"
        return (
            f"this host's name {name!r} does not resolve: add it to /etc/hosts, or pass --local-addr with this "
            f"host's address ({address})"
        )
    if setup.problem == "local_addr":
        return f"--local-addr {name} does not resolve: pass this host's address, the one the other nodes reach"
    if setup.problem == "local_addr_foreign":
        shown = f" ({name} is {found})" if found else ""
        return (
            f"--local-addr {name} is not an address of this host{shown}: pass one of its own addresses, the one the "
            "other nodes reach (`ip -brief address` lists them)"
        )
    endpoint_host, _, port = name.rpartition(":")
    if setup.problem == "endpoint_name":
        return (
            f"rendezvous endpoint {name}: the host {endpoint_host!r} does not resolve on this node; pass node 0's "
            "address in --rdzv-endpoint, or add the name to /etc/hosts"
        )
    if setup.problem == "endpoint_unreachable":
        return (
            f"rendezvous endpoint {name} cannot be reached from this node ({setup.why}): check that {endpoint_host} is "
            f"node 0's address on a network this node shares, and that no firewall drops port {port}"
        )
    if setup.problem == "endpoint_not_store":
        return (
            f"rendezvous endpoint {name}: port {port} is in use by a program that is not a c10d store; choose another "
            "port for --rdzv-endpoint"
        )
    if setup.problem == "gloo_interface":
        return (
            f"{GLOO_IFNAME}={name}: this host has no interface {found} (it has {interfaces}); set it to the interface "
            "on the network the other nodes reach, or unset it"
        )
    if setup.problem == "gloo_interface_loopback":
        return (
            f"{GLOO_IFNAME}={name} is loopback, which the other nodes cannot reach: set it to the interface on their "
            f"network (this host has {interfaces})"
        )
    if setup.problem == "gloo_loopback":
        bound = f"resolves to {found}" if found else "does not resolve"
        return (
            f"Gloo would bind to loopback, which the other nodes cannot reach (this host's name {name!r} {bound}): "
            f"set {GLOO_IFNAME} to the interface the other nodes reach (this host has {interfaces})"
        )
    return (
        f"torch's launcher could not reach {name}: the name {endpoint_host!r} does not resolve on this node; add it to "
        "/etc/hosts, or pass that node's --local-addr with its address"
    )


def error_text(error: CommprofError) -> str:
    """An error's one line: a failed run's and a set-up problem's from their facts, any other's as it says it."""
    if isinstance(error, RunFailed):
        return failed_text(error)
    if isinstance(error, SetupError):
        return setup_text(error.problem)  # type: ignore[arg-type]  # launch/preflight.py's facts
    return str(error)


def failed_text(failed: RunFailed) -> str:
    """A failed run's line as the terminal shows it: its cause, and where the worker logs are."""
    cause = failure_text(failed.cause)  # type: ignore[arg-type]  # a launch's facts, or a line
    return f"{cause} (worker logs: {failed.logs})" if failed.logs is not None else cause


def _ranks(ranks: tuple[int, ...]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def limit_text(limit: Limit | None) -> str:
    """` after 15 s of the process group's own timeout`: the timeout the backend says fired, told apart from
    commprof's --timeout; else --timeout's, or nothing."""
    if limit is None:
        return ""
    whose = {"--timeout": " of --timeout", "own": " of the process group's own timeout", "": ""}[limit.whose]
    return f" after {limit.seconds:g} s{whose}"


def signal_name(number: int) -> str:
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def _oom(kills: int) -> str:
    return (
        f"the out-of-memory killer (the kernel killed {kills} process{'es' if kills > 1 else ''} for memory in this "
        "machine's memory cgroup during the run)"
    )


def _killed(killed: Killed) -> str:
    where = f" {killed.site}" if killed.site else ""
    by_oom = f", by {_oom(killed.oom_kills)}" if killed.oom_kills else ""
    if killed.parted is not None:
        said = f": {parted_text(killed.parted)}"
    else:
        said = f": {killed.backend_said}" if killed.backend_said else ""
    return f"rank {killed.rank} on {killed.host} was killed by signal {signal_name(killed.signal)}{by_oom}{where}{said}"


def _named(nodes: tuple[LostNode, ...]) -> str:
    """`node1 (rank 1)`, `node1 (ranks 2, 3) and node2 (ranks 4, 5)`."""
    parts = []
    for node in nodes:
        store = ", the rendezvous store's host" if node.store else ""
        parts.append(f"{node.address} ({_ranks(node.ranks)}{store})")
    return " and ".join(parts)


def _lost(lost: LostHost) -> str:
    them = "it" if len(lost.lost) == 1 else "them"
    if lost.silent_s is None:
        how = f"the connection to {them} went ({lost.said})"
    else:
        within = f"for {lost.silent_s:g} s" if lost.silent_s else "within the timeout"
        how = f"nothing came from {them} {within}: a link or a host went ({lost.said})"
    where = waiting_text(lost.waiting) if lost.waiting is not None else None
    return f"{lost.this or 'this host'} lost {_named(lost.lost)}: {how}" + (f"; {where}" if where else "")


def _ended_early(ended: EndedEarly) -> str:
    one = len(ended.ranks) == 1
    site = f" {site_text(ended.site)}" if ended.site is not None else ""
    failed = f", and then failed: {ended.failed}" if ended.failed else ""
    return (
        f"{_ranks(ended.ranks)} on {ended.host} finished {'its' if one else 'their'} script after {ended.steps} steps "
        f"(exit {ended.status}) while {ended.waiting}{site}{failed}; {ENDED_EARLY_ADVICE}"
    )


def _overdue(overdue: Overdue) -> str:
    longer = "MPI has no timeout of its own" if overdue.mpi else "the script's process group would have waited longer"
    where = f"{hang_text(overdue.hang)}; " if overdue.hang is not None else ""
    return (
        f"{where}a collective waited over --timeout {overdue.timeout_s:g} s and {overdue.grace_s:g} s of grace on "
        f"{overdue.host} ({longer}): commprof stopped the job"
    )


def parted_text(parted: GlooParted) -> str:
    """`its collective at train.py:38 in main (dist.all_reduce(t)): rank 0's all_reduce #9 of the default group had
    1 tensor of 1,000 Float, 3.906 KiB where rank 1's had 1 tensor of 999 Float, 3.902 KiB: tensors that differ
    between the ranks`."""
    site, mine, rank, kind = parted.site, parted.mine, parted.rank, PARTED_KIND[parted.kind]
    said = f"its collective {site_text(site)}" if site is not None else "its collective"
    unknown = (
        f"rank {rank}'s tensors are not known ({_why(parted.mine_unknown)}; Gloo aborted it on a piece of "
        f"{parted.sent} bytes where it expected {parted.expected})"
    )
    theirs, peer = parted.theirs, parted.peer
    if parted.case == "paired" and mine is not None and theirs is not None and peer is not None:
        first, second = sorted([(rank, mine), (peer, theirs)], key=lambda side: side[0])
        return f"{said}: {_call(*first, site)} where {_call(*second, site, after=first[1])}: {kind}"
    if parted.case == "theirs" and theirs is not None:
        same_line = f"rank {peer}'s {collective_text(theirs)} from the same line had {tensors_text(theirs)}"
        return f"{said}: {same_line}; {unknown}: {kind}"
    if parted.case == "same_line":
        if mine is not None:
            peer_said = _peer_unknown(peer, parted.peer_unknown, mine)
            return f"{said}: {_call(rank, mine, site)}; {peer_said}, but it was at the same line: {kind}"
        return f"{said}: rank {peer} was at the same line; {unknown}: {kind}"
    none = f"none of rank {peer}'s last {parted.peer_calls} collectives was called from that line"
    if parted.case == "none_from_line":
        return f"{said}: {_call(rank, mine, site)}; {none}: {kind}" if mine else f"{said}: {none}; {unknown}: {kind}"
    if parted.case == "mine" and mine is not None:
        peer_said = f"; {_peer_unknown(peer, parted.peer_unknown, mine)}" if peer is not None else ""
        return f"{said}: {_call(rank, mine, site)}{peer_said}: {kind}"
    return f"{said}: {unknown}: {kind}"


def _site_key(frame: StackFrame) -> tuple[str, int]:
    return frame.file, frame.line


def _call(rank: int, call: EnteredCollective, site: StackFrame | None, after: EnteredCollective | None = None) -> str:
    """`rank 0's all_reduce #9 of the default group had 1 tensor of 1,000 Float, 3.906 KiB`, its line named where it is
    not the aborted rank's; after another of the same op, number and line, `rank 1's had ...`."""
    elsewhere = call.site is not None and site is not None and _site_key(call.site) != _site_key(site)
    numbered = after is not None and (after.seq == call.seq or 0 in (after.seq, call.seq))  # 0: not known
    same = after is not None and numbered and (after.op, after.group) == (call.op, call.group)
    what = "" if same and not elsewhere else f" {collective_text(call)}"
    at = f" {site_text(call.site)}" if elsewhere else ""
    return f"rank {rank}'s{what}{at} had {tensors_text(call)}"


def _why(unknown: Unknown) -> str:
    return "it wrote no account" if unknown == "no_account" else "its account was written before it entered it"


def _peer_unknown(peer: int | None, unknown: Unknown, mine: EnteredCollective) -> str:
    why = {
        "no_account": "it wrote no account",
        "no_line": "its account holds no call from that line",
        "no_seq": f"its account holds no #{mine.seq} of that group",
    }.get(unknown, "")
    return f"rank {peer}'s tensors are not known ({why})"
