"""Why a job failed: the rank (and node) that caused it, and the cause, as facts (results/failure_facts.py).

When one rank fails, the others fail too: a peer's socket closes under them, a collective times
out waiting for it, or the launcher stops them (SIGTERM). Only one of these failures is the root
cause, and a rank stuck outside any collective (sleeping, looping) has no error of its own (the
launcher stops it): it is the rank that the others timed out waiting for."""

from __future__ import annotations

import linecache
import re
import signal
import socket
from dataclasses import dataclass

from commprof.errors import what_went_wrong
from commprof.launch.parted import Parted, parted_facts
from commprof.results.failure_facts import (
    Crashed,
    Failure,
    Hang,
    Hung,
    Killed,
    Limit,
    LostHost,
    OwnError,
    RemoteWait,
    Stuck,
    Unrecorded,
    Vanished,
)
from commprof.results.hang import EnteredCollective, HangEvidence, StackFrame, own_code

_PEER_GONE = re.compile(
    r"Connection (closed|reset) by peer|Broken pipe|remote worker|communicator was aborted|"
    r"ProcessGroup.*(aborted|terminated)",
    re.IGNORECASE,
)
# what a rank stopped by its launcher's SIGTERM raises (worker/rank.py), and the root cause it is told apart from
STOPPED_MESSAGE = "stopped by the launcher (SIGTERM) while still running"
# what a rank raises at Ctrl-C (SIGINT; worker/rank.py); a rank of a user's script records KeyboardInterrupt
INTERRUPTED_MESSAGE = "interrupted (SIGINT) while still running"
_INTERRUPTED = re.compile(rf"{re.escape(INTERRUPTED_MESSAGE)}|^KeyboardInterrupt\b")
_TIMED_OUT = re.compile(r"timed out|timeout", re.IGNORECASE)
# torch elastic's own words for a worker it stopped (SignalException), when SIGTERM reaches it outside commprof's
# handler
_TERMINATED = re.compile(r"Signal 15 \(SIGTERM\) received by PID")
# NCCL's watchdog aborts a rank whose collective timed out (SIGABRT, no error file); its log says why
WATCHDOG = re.compile(r"Watchdog caught collective operation timeout.*", re.IGNORECASE)


@dataclass(frozen=True)
class RankOutcome:
    rank: int
    message: str  # the last line of its recorded error; "" when it recorded none
    exitcode: int | None  # negative: killed by that signal; None: ended without recording an error
    timestamp: float = 0.0  # when the error was recorded
    crash_site: str = ""  # where a crashed rank's Python code was, from its log (crash_site)
    traceback: str = ""  # the Python traceback its error file recorded
    parted: Parted | None = None  # Gloo aborted it on a collective of another size than its peer's
    stopped_at: StackFrame | None = None  # its own code's line when the launcher stopped it (its log's stack)
    backend_said: str = ""  # what a C++ exception that ended it said (`what():` in its log), e.g. Gloo's enforce
    account: HangEvidence | None = None  # what it wrote of itself when it stalled or was stopped (results/hang.py)
    entering: EnteredCollective | None = None  # the collective it last called, recorded before the backend ran it

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C (SIGINT), not by an error of its own."""
        return bool(_INTERRUPTED.search(self.message))

    @property
    def own_line(self) -> StackFrame | None:
        """The line of the user's code its recorded error was raised at, else the one it was at when stopped."""
        frames = [m.groupdict() for m in _TRACEBACK_FRAME.finditer(self.traceback)][::-1]  # innermost first
        return _own_frame(frames) or self.stopped_at

    @property
    def kind(self) -> str:
        if self.exitcode == 0 and not self.message:  # its script returned
            return "returned"
        if WATCHDOG.search(self.message):
            return "timed out"
        if (
            STOPPED_MESSAGE in self.message
            or self.interrupted
            or _TERMINATED.search(self.message)
            or (not self.message and self.exitcode == -signal.SIGTERM)
        ):
            return "stopped"
        if self.exitcode is None or (self.exitcode < 0 and self.exitcode != -signal.SIGTERM):
            return "killed"
        if _PEER_GONE.search(self.message):
            return "peer gone"
        if _TIMED_OUT.search(self.message):
            return "timed out"
        return "error" if self.message or self.exitcode else "stopped"


def root_cause(
    outcomes: list[RankOutcome],
    host: str | None = None,
    timeout_s: float | None = None,
    never_arrived: Hang | None = None,
    oom_kills: int = 0,
    lost_host: LostHost | None = None,
) -> Failure:
    """The rank(s) to blame, on which host, and why. The first rank to fail on its own (killed, or an error of its
    own; killed first when both happen within the same second) is the cause: one killed after another's error is
    collateral (a rank blocked on the GPU can outlive the launcher's grace period). `never_arrived`: the hang the
    ranks' accounts or NCCL's flight recorder tell. `oom_kills`: the processes the kernel killed for memory during
    the launch (launch/oom.py): the only evidence on which a rank is said to have run out of memory. `lost_host`:
    the host this node lost and how (launch/lost_peers.py), the cause when no rank of this node failed on its
    own."""
    host = host or socket.gethostname()
    by_kind = _by_kind(outcomes)
    crashed_while_stuck = _crashed_after_a_timeout(by_kind)
    first = first_own_failure(outcomes)
    if first is not None and first.kind == "killed":
        return _killed(first, host, outcomes, oom_kills)
    if first is not None:
        return OwnError(first.rank, host, first.message, first.exitcode)
    if lost_host:
        return lost_host
    if "timed out" in by_kind and never_arrived:
        return Hung(never_arrived, host, _limit(by_kind["timed out"], timeout_s))
    if "timed out" in by_kind:
        waiting = by_kind["timed out"]
        limit = _limit(waiting, timeout_s)
        if "stopped" in by_kind or crashed_while_stuck:
            stuck = by_kind.get("stopped", []) + crashed_while_stuck
            crashes = tuple((o.rank, -(o.exitcode or 0)) for o in crashed_while_stuck)
            return Stuck(_ranks(stuck), _ranks(waiting), host, limit, crashes)
        return RemoteWait(_ranks(waiting), host, waiting[0].message, limit)
    rest = by_kind.get("peer gone") or by_kind.get("stopped")
    if not rest:
        return Unrecorded(host)
    return OwnError(rest[0].rank, host, rest[0].message, rest[0].exitcode)


# the timeout a backend says fired: Gloo's "Timed out waiting 15000ms for recv", NCCL's watchdog "Timeout(ms)=600000"
_FIRED_MS = re.compile(r"waiting (\d+)\s*ms|Timeout\(ms\)=(\d+)")


def fired_timeout_s(message: str) -> float | None:
    """The timeout that fired, in seconds, as the backend's error says it; None where it does not."""
    found = _FIRED_MS.search(message)
    return int(found.group(1) or found.group(2)) / 1000 if found else None


def _limit(waiting: list[RankOutcome], timeout_s: float | None) -> Limit | None:
    """The timeout the backend says fired, told apart from commprof's --timeout (which bounds only the groups the
    script made without one); else --timeout's, or None."""
    fired = next((t for o in waiting if (t := fired_timeout_s(o.message)) is not None), None)
    if fired is None:
        return Limit(timeout_s) if timeout_s else None
    return Limit(fired, "--timeout" if timeout_s is not None and abs(fired - timeout_s) < 0.5 else "own")


def _killed(first: RankOutcome, host: str, outcomes: list[RankOutcome], oom_kills: int) -> Failure:
    """A rank that ended without an error of its own, told from what it left: its exit status (torch's, or the
    signal faulthandler named in its log), where it crashed, what the backend said, the kernel's out-of-memory
    count."""
    if first.exitcode is None and first.crash_site:
        return Crashed(first.rank, host, first.crash_site)
    if first.exitcode is None:
        return Vanished(first.rank, host, oom_kills)
    parted = parted_facts(first.parted, first.rank, outcomes) if first.parted else None
    by_oom = oom_kills if first.exitcode == -signal.SIGKILL else 0
    return Killed(first.rank, host, -first.exitcode, by_oom, first.crash_site, first.backend_said, parted)


def first_own_failure(outcomes: list[RankOutcome]) -> RankOutcome | None:
    """The rank root_cause blames when one failed on its own: the first killed (not while stuck, see
    _crashed_after_a_timeout) or with an error of its own; killed first when both fall in the same second."""
    by_kind = _by_kind(outcomes)
    crashed_while_stuck = _crashed_after_a_timeout(by_kind)
    own = sorted(
        [o for o in by_kind.get("killed", []) if o not in crashed_while_stuck] + by_kind.get("error", []),
        key=lambda o: (o.timestamp or float("inf"), o.kind != "killed", o.rank),
    )
    return own[0] if own else None


def interrupted_by_user(outcomes: list[RankOutcome]) -> bool:
    """Ranks that ended on Ctrl-C, none of them on an error of its own: the job was interrupted, not failed (the
    ranks saw the terminal's SIGINT before their launcher did)."""
    return first_own_failure(outcomes) is None and any(o.interrupted for o in outcomes)


def _by_kind(outcomes: list[RankOutcome]) -> dict[str, list[RankOutcome]]:
    by_kind: dict[str, list[RankOutcome]] = {}
    for outcome in sorted(outcomes, key=lambda o: (o.timestamp or float("inf"), o.rank)):
        by_kind.setdefault(outcome.kind, []).append(outcome)
    return by_kind


_FATAL = re.compile(
    r"Fatal Python error: .*?\n\s*Current thread 0x[0-9a-f]+ \(most recent call first\):\n"
    r"(?:\s+File \"(?P<file>[^\"]+)\", line (?P<line>\d+) in (?P<function>\S+))?",
    re.DOTALL,
)


# faulthandler's first line for each fatal signal it handles
_FATAL_SIGNALS = {
    "Aborted": signal.SIGABRT,
    "Segmentation fault": signal.SIGSEGV,
    "Bus error": signal.SIGBUS,
    "Floating point exception": signal.SIGFPE,
    "Illegal instruction": signal.SIGILL,
}
_FATAL_LINE = re.compile(rf"^Fatal Python error: ({'|'.join(_FATAL_SIGNALS)})$", re.M)
_WHAT = re.compile(r"^terminate called after throwing an instance of '[^']+'\n\s*what\(\):\s*(.+)$", re.M)
_ENFORCE_SITE = re.compile(r"^\[enforce fail at [^\]]+\]\s*")


def fatal_signal(log: str) -> int | None:
    """The signal that ended a rank, as faulthandler named it in its log (the rank could write no error of its own
    and its exit status may not be known: torch reports one failed rank per node); None where the log names none."""
    found = _FATAL_LINE.findall(log)
    return int(_FATAL_SIGNALS[found[-1]]) if found else None


def backend_said(log: str) -> str:
    """What the C++ exception that ended a rank said (`terminate called ... what(): ...`, Gloo's enforce failures),
    without the source location; "" where there is none."""
    found = _WHAT.findall(log)
    return what_went_wrong(_ENFORCE_SITE.sub("", found[-1].strip())) if found else ""


def crash_site(log: str) -> str:
    """`in FUNCTION (FILE:LINE)` of the crashing thread, from the stack faulthandler writes when a worker
    crashes (the workers enable it); "" when the log holds none."""
    found = None
    for found in _FATAL.finditer(log):  # noqa: B007 (the last one)
        pass
    if found is None:
        return ""
    if not found.group("file"):
        return "in a thread running no Python code"
    path = "/".join(found.group("file").split("/")[-2:])
    return f"in {found.group('function')} ({path}:{found.group('line')})"


_THREAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):\n((?:  .*\n?)*)", re.M)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')
_RUNNERS = ("commprof/worker/", "<frozen runpy>")  # the frames below a rank's main thread
# gloo/transport/tcp/pair.cc's enforce, when a peer sends a piece of more or fewer bytes than this rank's collective
# expects (launch/parted.py)
_GLOO_SIZES = re.compile(r"(\d+) vs (\d+)\. Received data size doesn't match expected size")


def collective_parted(log: str) -> Parted | None:
    """From a rank's log, when Gloo aborted it because a peer's collective sent a piece of another number of bytes than
    its own expected: the pieces' sizes, and what the rank's main thread was calling, from faulthandler's stack of
    every thread (the abort comes from a thread of Gloo's, with no Python frame)."""
    sizes = _GLOO_SIZES.search(log)
    if sizes is None:
        return None
    return Parted(int(sizes.group(1)), int(sizes.group(2)), main_thread_site(log))


def main_thread_site(log: str) -> StackFrame | None:
    """The line of the user's code a rank's main thread was in, from the last stack of every thread faulthandler
    wrote to its log (on a crash, or when the launcher stopped it); None where there is none."""
    site = None
    for thread in _THREAD.finditer(log):
        frames = [m.groupdict() for m in _FRAME.finditer(thread.group(1))]  # innermost first
        if any(runner in f["file"] for f in frames for runner in _RUNNERS):
            site = _own_frame(frames)
    return site


_TRACEBACK_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')


def _own_frame(frames: list[dict[str, str]]) -> StackFrame | None:
    """The first of `frames` (innermost first) in the user's own code, with its line of source."""
    own = next((f for f in frames if own_code(f["file"])), None)
    if own is None:
        return None
    code = linecache.getline(own["file"], int(own["line"])).strip()
    return StackFrame(own["file"], int(own["line"]), own["function"], code, True)


def _crashed_after_a_timeout(by_kind: dict[str, list[RankOutcome]]) -> list[RankOutcome]:
    """Ranks killed by a signal no later than the second in which another rank's collective timed out: the
    others had been waiting for them the whole timeout, so they were stuck while alive, and crashed only as
    their peers left (Gloo can crash a rank whose peer closes its sockets)."""
    timeouts = [o.timestamp for o in by_kind.get("timed out", []) if o.timestamp]
    if not timeouts:
        return []
    return [
        o for o in by_kind.get("killed", []) if o.exitcode is not None and o.timestamp and o.timestamp >= min(timeouts)
    ]


def _ranks(outcomes: list[RankOutcome]) -> tuple[int, ...]:
    return tuple(sorted(o.rank for o in outcomes))
