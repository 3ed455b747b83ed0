"""Exception types (the CLI turns each into one line and an exit code), and the line of a foreign error
message worth showing; why a file could not be written."""

import errno
import re
import signal
from pathlib import Path


class CommprofError(Exception):
    """Base class: a failure with a message meant for the user."""

    exit_code = 1


class UsageError(CommprofError):
    """Bad input: options, files, model specs. Exit code 2."""

    exit_code = 2


class TraceError(UsageError):
    """A trace file that cannot be used."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class NothingToReport(UsageError):
    """Traces with no step to report: every step they hold was cut short by a failure or an interrupt."""


class WorkloadError(UsageError):
    """A model spec that cannot be loaded or does not train."""


class ModelRunError(WorkloadError):
    """The model was built but could not run a batch where it was checked (on the CPU)."""


class SetupError(UsageError):
    """A set-up problem of this node, found before anything is launched (launch/preflight.py): its facts
    (results/failure_facts.SetupProblem), said by render/failure_words.py."""

    def __init__(self, problem: object):
        super().__init__(type(problem).__name__)
        self.problem = problem


class RunFailed(CommprofError):
    """The training job itself failed. Exit code 1.

    `cause`: why, as the facts of results/failure_facts.py (a launch's) or a line (a setup problem's); render/
    failure_words.py says the facts. `logs`: the worker logs' folder, when the ranks had any; `traceback`: the user's
    own traceback (their script raised), which the CLI shows above the message, as python would have shown it."""

    def __init__(self, cause: object, run_dir=None, logs=None, traceback: str = ""):
        super().__init__(cause if isinstance(cause, str) else type(cause).__name__)
        self.cause = cause
        self.run_dir = run_dir  # the run folder this failed run created (traces kept there), if any
        self.logs = logs
        self.traceback = traceback


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM (Ctrl-C, kill, a batch system's stop), raised where commprof was when it came: a
    KeyboardInterrupt, so no `except Exception` swallows it. The CLI says its one line and exits 128 + the
    signal's number (130, 143), as a shell reports a process its signal ended."""

    def __init__(self, signum: int = signal.SIGINT, message: str = "interrupted", run_dir=None):
        super().__init__(message)
        self.signum = int(signum)
        self.message = message
        self.run_dir = run_dir  # the run folder the interrupted launch started, if any

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def raise_interrupted(signum: int, frame: object) -> None:
    """A signal handler: the signal becomes Interrupted where the program was."""
    raise Interrupted(signum)


# Known errors whose first sentence alone does not say what to do: (text in the message, advice)
ADVICE = (("find_unused_parameters=True", "some parameters received no gradient: pass --find-unused-parameters"),)
# Known errors whose line names no fix, though it names the cause: (text in the line, advice)
_GLOO_REACH = (
    "Gloo's ranks could not connect: each announces the address of GLOO_SOCKET_IFNAME's interface (or of its host's "
    "name); set GLOO_SOCKET_IFNAME on every node to the interface the other nodes reach"
)
FIXES = (
    ("Unable to find address for", "GLOO_SOCKET_IFNAME names an interface this host lacks (`ip -brief link`)"),
    ("Gloo connectFullMesh failed", _GLOO_REACH),
    ("Connect timeout", _GLOO_REACH),
)
_CPP_CONTEXT = re.compile(r"(Exception raised from |frame #\d+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
LONG_LINE = 160


def what_went_wrong(message: str) -> str:
    """The line of an error message that says what is wrong: its first line without C++ context, cut
    after its first sentence when it runs on (DDP's errors are a page long), with advice for known errors."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not _CPP_CONTEXT.match(line)]
    if not lines:
        return ""
    line = lines[0]
    if len(line) > LONG_LINE:
        line = _SENTENCE_END.split(line, maxsplit=1)[0]
    advice = [hint for marker, hint in ADVICE if marker in message and marker not in line]
    advice = list(dict.fromkeys([*advice, *(hint for marker, hint in FIXES if marker in message)]))
    return f"{line} ({'; '.join(advice)})" if advice else line


def why_not_written(where: Path, exc: OSError) -> str:
    """The error's own words, unless they name the wrong problem: a file where a folder should be, which
    says 'Not a directory', or a folder of /proc or /sys, where creating a file says 'No such file or directory'
    about a folder that is there. `where`: the folder that exists (or the file in its place)."""
    if exc.errno == errno.ENOTDIR and where.exists() and not where.is_dir():
        return f"{where} is a file, not a folder"
    if exc.errno == errno.ENOENT and where.is_dir():
        return f"{where} takes no new files: a virtual file system"
    return exc.strerror or str(exc)
