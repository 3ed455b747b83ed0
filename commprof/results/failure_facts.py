"""The facts of a job that failed or hung (issue 71, item 1): the cause a launch names (launch/faults.py), the hang
its ranks' accounts tell (launch/hang_evidence.py), where Gloo aborted a rank on a peer's piece (launch/parted.py),
the host a node lost (launch/lost_peers.py). render/failure_words.py says them; run.json keeps them (`failure`).

Each is a msgspec Struct tagged with its kind, so a run's record reads them back as they were written."""

from __future__ import annotations

from typing import Literal

import msgspec

from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame


class _Fact(msgspec.Struct, frozen=True, tag_field="kind"):
    pass


# --- a hang: where the ranks' collectives part, else who is behind and who waits


class Side(msgspec.Struct, frozen=True):
    ranks: tuple[int, ...]
    call: EnteredCollective


# how two calls at one position differ: another op, dtype, a call only some ranks make (met by another), a shape
Mismatch = Literal["op", "dtype", "only_some_met", "shape"]


class Parting(_Fact, frozen=True, tag="parting"):
    """The first collective (lowest sequence number of a group) two ranks entered with different ops, dtypes or
    shapes; `lines_known`: the evidence kept the line of the script that called each."""

    seq: int
    first: Side
    second: Side
    mismatch: Mismatch
    lines_known: bool = True


class Behind(_Fact, frozen=True, tag="behind"):
    """A hang where the calls the ranks share agree: the ranks behind (by rank; where no Flight Recorder says which
    collective the others wait in, `ahead` is None and `behind` holds every rank, the fewest steps first), and the
    ranks that wait in `ahead`."""

    behind: tuple[HangEvidence, ...]
    waiting: tuple[HangEvidence, ...]
    ahead: EnteredCollective | None


Hang = Parting | Behind


# --- Gloo aborted a rank on a piece of another size than its collective expected

# which of the ranks' calls commprof knows: both (paired); the peer's only, from the same line (theirs); the peer was
# at the same line (same_line); none of the peer's recent calls came from that line (none_from_line); the aborted
# rank's only (mine); neither (unknown)
PartedCase = Literal["paired", "theirs", "same_line", "none_from_line", "mine", "unknown"]
# why a rank's call is not known: it wrote no account; its account was written before it entered the call; its
# account holds no call from that line; it holds no call with that sequence number
Unknown = Literal["no_account", "before", "no_line", "no_seq", ""]
PartedKind = Literal["op", "only_some_met", "tensors", "only_some", "either"]


class GlooParted(msgspec.Struct, frozen=True):
    """What the aborted `rank`'s collective and a peer's were (`mine`, `theirs`), where their accounts say, and the
    kind of mismatch; Gloo's piece: `sent` bytes where `expected`. `site`: the line its main thread was calling."""

    rank: int
    sent: int
    expected: int
    site: StackFrame | None
    case: PartedCase
    kind: PartedKind
    mine: EnteredCollective | None = None
    mine_unknown: Unknown = ""
    peer: int | None = None
    theirs: EnteredCollective | None = None
    peer_unknown: Unknown = ""
    peer_calls: int = 0  # the peer's recent calls, none from that line (none_from_line)


# --- the cause of a failed job, one per kind


class Limit(msgspec.Struct, frozen=True):
    """The timeout that fired: `whose` is "--timeout", the process group's "own", or "" where the backend named none
    (then --timeout's)."""

    seconds: float
    whose: Literal["--timeout", "own", ""] = ""


class OwnError(_Fact, frozen=True, tag="own_error"):
    """A rank failed with an error of its own (`message`: its last line; "" where it recorded none)."""

    rank: int
    host: str
    message: str
    exitcode: int | None


class Crashed(_Fact, frozen=True, tag="crashed"):
    """A rank ended without an exit status commprof saw; its log names where it crashed (`site`)."""

    rank: int
    host: str
    site: str


class Vanished(_Fact, frozen=True, tag="vanished"):
    """A rank ended without an error, an exit status or a crash in its log; `oom_kills`: the processes the kernel
    killed for memory meanwhile."""

    rank: int
    host: str
    oom_kills: int


class Killed(_Fact, frozen=True, tag="killed"):
    """A rank killed by `signal`: where it crashed, what the backend said, or the collective Gloo aborted it on."""

    rank: int
    host: str
    signal: int
    oom_kills: int = 0
    site: str = ""
    backend_said: str = ""
    parted: GlooParted | None = None


class LostNode(msgspec.Struct, frozen=True):
    address: str
    ranks: tuple[int, ...]
    store: bool = False  # it hosts the rendezvous store


class LostHost(_Fact, frozen=True, tag="lost_host"):
    """This node (`this`) lost others: their connection closed (`silent_s` None) or nothing came from them for
    `silent_s` (0: within the timeout); `said`: the backend's words; `waiting`: where this node's first rank was."""

    this: str
    lost: tuple[LostNode, ...]
    said: str
    silent_s: float | None = None
    waiting: HangEvidence | None = None


class Hung(_Fact, frozen=True, tag="hung"):
    """The ranks' accounts (or the Flight Recorder's dumps) tell the hang; the others timed out on `host`."""

    hang: Hang
    host: str
    limit: Limit | None = None


class Stuck(_Fact, frozen=True, tag="stuck"):
    """Ranks that never reached the collective others waited in until it timed out; `crashes`: ranks then killed,
    with their signal."""

    stuck: tuple[int, ...]
    waiting: tuple[int, ...]
    host: str
    limit: Limit | None = None
    crashes: tuple[tuple[int, int], ...] = ()


class RemoteWait(_Fact, frozen=True, tag="remote_wait"):
    """Every rank of this node waited until a collective timed out, for a rank on another node."""

    waiting: tuple[int, ...]
    host: str
    message: str
    limit: Limit | None = None


class Unrecorded(_Fact, frozen=True, tag="unrecorded"):
    """The job failed on `host` with no rank's error recorded."""

    host: str


class EndedEarly(_Fact, frozen=True, tag="ended_early"):
    """Ranks that finished their script (exit `status`) after `steps` while another waited for them (`waiting`: the
    rank's own words, worker/script_end.py); `failed`: what the waiting rank then failed with."""

    ranks: tuple[int, ...]
    host: str
    steps: int
    status: int
    waiting: str
    site: StackFrame | None = None
    failed: str = ""


class Overdue(_Fact, frozen=True, tag="overdue"):
    """commprof stopped the job: a collective waited longer than --timeout and the grace on `host`; `mpi`: every such
    wait was in MPI, which has no timeout of its own."""

    hang: Hang | None
    host: str
    timeout_s: float
    grace_s: float
    mpi: bool = False


class Raised(_Fact, frozen=True, tag="raised"):
    """The script's own error ended the job; the terminal shows its traceback above (`also`: ranks that raised the
    same)."""

    rank: int
    host: str
    also: tuple[int, ...] = ()


class MpirunFailed(_Fact, frozen=True, tag="mpirun_failed"):
    """mpirun ended (`code`) before any rank began or left a word, or did not finish within `limit_s`."""

    code: int | None
    said: str = ""
    limit_s: float | None = None


# a set-up problem of this node (launch/preflight.py): this host's name or --local-addr does not resolve, or is not
# this host's; the rendezvous endpoint does not resolve, cannot be reached, or a program that is not a c10d store
# holds its port; GLOO_SOCKET_IFNAME names an interface this host lacks, or loopback; Gloo would bind to loopback;
# the node torch's launcher was reaching does not resolve
Setup = Literal[
    "host_name",
    "local_addr",
    "local_addr_foreign",
    "endpoint_name",
    "endpoint_unreachable",
    "endpoint_not_store",
    "gloo_interface",
    "gloo_interface_loopback",
    "gloo_loopback",
    "peer_name",
]


class SetupProblem(_Fact, frozen=True, tag="setup"):
    """`name`: the name, address, endpoint or variable's value at fault; `found`: what it resolves to, or the
    interfaces missing; `interfaces`: this host's; `why`: how a connection failed; `one_node`: a job of one node."""

    problem: Setup
    name: str
    found: tuple[str, ...] = ()
    interfaces: tuple[str, ...] = ()
    why: str = ""
    one_node: bool = False


class RendezvousFailed(_Fact, frozen=True, tag="rendezvous"):
    """The nodes did not meet: not all `nodes` joined run `run_id` at `endpoint` within `seconds` (timeout), no c10d
    store answered there (no_store), or torch's launch raised (other: `said`)."""

    how: Literal["timeout", "no_store", "other"]
    endpoint: str
    seconds: float = 0.0
    nodes: int = 1
    run_id: str = ""
    said: str = ""


Failure = (
    SetupProblem
    | RendezvousFailed
    | OwnError
    | Crashed
    | Vanished
    | Killed
    | LostHost
    | Hung
    | Stuck
    | RemoteWait
    | Unrecorded
    | EndedEarly
    | Overdue
    | Raised
    | MpirunFailed
)
