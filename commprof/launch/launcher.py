"""RunConfig -> LaunchConfig -> elastic_launch: torch's own launcher, as torchrun uses it."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import signal
import socket
import tempfile
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable, Iterator, cast

from torch.distributed.elastic.multiprocessing import SignalException
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

from commprof.backends import by_name
from commprof.config import RunConfig
from commprof.errors import Interrupted, RunFailed, what_went_wrong
from commprof.launch import flight_recorder, forkserver, rendezvous
from commprof.launch.deadline import CollectiveDeadline
from commprof.launch.exit_status import observed_exits
from commprof.launch.faults import (
    WATCHDOG,
    RankOutcome,
    backend_said,
    collective_parted,
    crash_site,
    fatal_signal,
    first_own_failure,
    interrupted_by_user,
    main_thread_site,
    root_cause,
)
from commprof.launch.hang_evidence import describe_hang, hang_evidence_environment
from commprof.launch.lost_peers import FailedRank, JobNodes, lost_peers
from commprof.launch.oom import OomWatch
from commprof.launch.preflight import endpoint_is_here, failed_setup
from commprof.launch.result import LaunchResult
from commprof.launch.runlog import claim_if_unstarted, mark_failed, mark_interrupted, started_by
from commprof.launch.script_ends import ended_early
from commprof.launch.script_output import ShownLogs
from commprof.launch.tracebacks import user_traceback
from commprof.native_logs import restore_for_workers
from commprof.results.failure_facts import Failure, Raised, RendezvousFailed
from commprof.results.hang import ENTERING_PREFIX, EVIDENCE_PREFIX, read_entering, read_evidence
from commprof.results.script_ended import ENDED_PREFIX, read_ended

# 'localhost:0' is torchrun --standalone: the c10d store binds a free port itself.
STANDALONE_ENDPOINT = "localhost:0"
SHUTDOWN_GRACE_S = 15  # a stopped rank's time to write the trace it was recording
# the signals torch's elastic agent turns into SignalException (TORCHELASTIC_SIGNALS_TO_HANDLE's default), stopping
# the ranks with the same signal; it leaves its handlers installed, so commprof puts its own back after a launch
AGENT_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


def launch_config(config: RunConfig, log_dir: Path) -> LaunchConfig:
    rendezvous.register()
    timeout = max(1, int(config.timeout_s))
    # torch before 2.12 has no shutdown_timeout: its agent gives a stopped rank its default 30 s
    grace: dict[str, Any] = (
        {"shutdown_timeout": SHUTDOWN_GRACE_S} if "shutdown_timeout" in LaunchConfig.__dataclass_fields__ else {}
    )
    endpoint = config.rdzv_endpoint or STANDALONE_ENDPOINT
    # with --local-addr on a host whose name does not resolve, torch cannot tell whether it hosts the store: told
    here = endpoint_is_here(endpoint) if config.local_addr else None
    return LaunchConfig(
        min_nodes=config.nodes,
        max_nodes=config.nodes,
        nproc_per_node=config.procs_per_node,
        run_id=config.run_id,
        rdzv_backend=rendezvous.BACKEND,  # torch's c10d, for a fixed set of nodes
        rdzv_endpoint=endpoint,
        # join: every node must arrive within the timeout; read: each store operation
        rdzv_configs={
            "join_timeout": timeout,
            "read_timeout": timeout,
            "close_timeout": min(timeout, 30),
            **({"is_host": here} if here is not None else {}),
        },
        local_addr=config.local_addr,
        max_restarts=0,
        monitor_interval=0.1,
        # every rank's output goes to its logs; a script's is also shown, as torchrun --tee shows it
        logs_specs=ShownLogs(str(log_dir), config.script_output if config.script else "none"),
        start_method=forkserver.start_method(config.device),
        **grace,
    )


def launch(
    config: RunConfig,
    entrypoint: Callable[..., Any] | str,
    args: tuple[Any, ...],
    environment: dict[str, str] | None = None,
    hang_dir: Path | None = None,
) -> LaunchResult:
    """Run `entrypoint(*args)` on every rank of this node (through launch.job.run_job): a function, or a program
    (a path) started with those arguments and `environment` added (what the user set wins); worker output goes
    to <run dir>/logs/<host>/. A rank that stalls writes its account to `hang_dir` (where the progress is
    watched; the log folder if none), kept with the logs.

    On failure: RunFailed naming the rank and cause (and, for a program, the user's own traceback); the run
    folder (if this launch started it) keeps every trace written, and its run.json is marked failed. On SIGINT or
    SIGTERM: the agent stops the ranks with that signal (each writes the trace it was recording), run.json is
    marked interrupted, and Interrupted is raised."""
    _quiet_torch_loggers()
    restore_for_workers()
    log_dir = Path(tempfile.mkdtemp(prefix="commprof-logs-"))
    hang_dir = hang_dir or log_dir
    deadline = CollectiveDeadline(hang_dir, config.timeout_s)
    oom = OomWatch()
    rendezvous.latest.clear()
    variables = {
        **hang_evidence_environment(hang_dir),
        **(flight_recorder.environment(log_dir) if by_name(config.backend).flight_recorder else {}),
        **(environment or {}),
    }
    added = {name: value for name, value in variables.items() if name not in os.environ}  # what the user set wins
    if callable(entrypoint):
        if forkserver.start_method(config.device) == "forkserver":
            forkserver.start()
        entrypoint, args = forkserver.in_environment, (added, os.getcwd(), entrypoint, *args)
    try:
        with (
            _workers_environment(added),
            _own_signal_handlers(),
            observed_exits() as exits,
            deadline.watching() if config.timeout_given else nullcontext(),
        ):
            launching = launch_config(config, log_dir)
            try:
                results = elastic_launch(launching, entrypoint)(*args)
            finally:
                cast(ShownLogs, launching.logs_specs).stop()
                keep_evidence(hang_dir, log_dir)
    except ChildFailedError as exc:
        outcomes = _outcomes(exc, log_dir, config, exits)
        if interrupted_by_user(outcomes):  # the ranks saw the terminal's Ctrl-C before the agent did
            raise job_interrupted(config, signal.SIGINT, log_dir) from None
        raise job_failed(config, outcomes, log_dir, oom.killed(), _job_nodes(config)) from None
    except SignalException as exc:  # SIGINT or SIGTERM while the agent ran the ranks: it has stopped them
        if deadline.overdue:  # the SIGTERM was the deadline's
            raise run_failed(config, deadline.summary(socket.gethostname()), log_dir) from None
        raise job_interrupted(config, exc.sigval, log_dir) from None
    except KeyboardInterrupt as exc:  # before the agent's handlers were in place (Interrupted: commprof's own)
        raise job_interrupted(config, getattr(exc, "signum", signal.SIGINT), log_dir) from None
    except Exception as exc:  # rendezvous timeouts and agent errors surface as various types
        raise run_failed(config, _rendezvous_problem(exc, config), log_dir) from None
    keep_logs(log_dir, config)
    # a function returns where it wrote; a program returns nothing, and its results are keyed by global rank
    first = next(iter(results.values())) or {"run_id": config.run_id, "run_dir": str(config.run_dir)}
    return LaunchResult(first["run_id"], Path(first["run_dir"]), tuple(sorted(results)))


@contextmanager
def _workers_environment(added: dict[str, str]) -> Iterator[None]:
    """Variables spawned workers inherit, for this launch only (a forked rank gets them from in_environment)."""
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextmanager
def _own_signal_handlers() -> Iterator[None]:
    """The handlers of the agent's signals as they were before it replaced them (in the main thread only)."""
    numbers = [getattr(signal, name) for name in AGENT_SIGNALS if hasattr(signal, name)]
    try:
        saved = {number: signal.getsignal(number) for number in numbers}
    except ValueError:
        saved = {}
    try:
        yield
    finally:
        for number, handler in saved.items():
            try:
                signal.signal(number, handler if handler is not None else signal.SIG_DFL)
            except ValueError:  # not the main thread: the agent could not install its own either
                pass


def _quiet_torch_loggers() -> None:
    """commprof says what happened in one line; torch elastic's loggers each set their own level (LOGLEVEL or
    WARNING), so each is silenced, not only their parent."""
    prefixes = ("torch.distributed.elastic", "torch.multiprocessing")
    known = list(logging.root.manager.loggerDict)  # at once: a thread importing matplotlib adds loggers meanwhile
    names = [*prefixes, *(n for n in known if n.startswith(prefixes))]
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def job_interrupted(config: RunConfig, signum: int, log_dir: Path) -> Interrupted:
    """The ranks are stopped; the run folder this launch started keeps what they wrote, and says it was
    interrupted."""
    name = signal.Signals(signum).name if signum in set(signal.Signals) else f"signal {signum}"
    if not started_by(config.run_dir, config.launch_id):
        return Interrupted(signum, f"interrupted ({name})")
    keep_logs(log_dir, config)
    mark_interrupted(config.run_dir, f"interrupted by {name}")
    return Interrupted(signum, f"interrupted ({name})", run_dir=config.run_dir)


def job_failed(
    config: RunConfig, outcomes: list[RankOutcome], log_dir: Path, oom_kills: int = 0, nodes: JobNodes | None = None
) -> RunFailed:
    """The root cause; for a user's script, its own traceback when its error was the cause."""
    host = socket.gethostname()
    if any(o.rank == 0 for o in outcomes):
        claim_if_unstarted(config, host)
    accounts, entering = read_evidence(log_dir), read_entering(log_dir)
    outcomes = [dataclasses.replace(o, account=accounts.get(o.rank), entering=entering.get(o.rank)) for o in outcomes]
    never_arrived = describe_hang(accounts) or describe_hang(flight_recorder.read_dumps(log_dir))
    first_rank = min((o.rank for o in outcomes), default=0)
    failed = [FailedRank(o.rank, o.message, o.account, rank_stderr(log_dir, o.rank - first_rank)) for o in outcomes]
    lost = lost_peers(failed, nodes, config.timeout_s)
    summary = ended_early(read_ended(log_dir), outcomes, host) or root_cause(
        outcomes, host, config.timeout_s, never_arrived, oom_kills, lost
    )
    first = first_own_failure(outcomes)
    shown = user_traceback(first.traceback) if config.script and first is not None and first.kind == "error" else ""
    if not shown or first is None:
        return run_failed(config, summary, log_dir)
    also = tuple(
        sorted(o.rank for o in outcomes if o.kind == "error" and o.rank != first.rank and o.message == first.message)
    )
    return run_failed(config, summary, log_dir, Raised(first.rank, host, also), shown)


def _job_nodes(config: RunConfig) -> JobNodes | None:
    """The nodes of this launch, as its rendezvous met them (None: it did not complete, or one node)."""
    if config.nodes < 2 or not rendezvous.latest or not rendezvous.latest[0].nodes:
        return None
    handler = rendezvous.latest[0]
    nodes = JobNodes(handler.nodes, handler.node_rank, config.procs_per_node)
    try:
        store_ip = socket.gethostbyname((config.rdzv_endpoint or "").rsplit(":", 1)[0])
    except OSError:
        return nodes
    return dataclasses.replace(nodes, store=nodes.node_at(store_ip))


def run_failed(
    config: RunConfig, summary: Failure | str, log_dir: Path, shown: Failure | None = None, traceback: str = ""
) -> RunFailed:
    """run.json gets `summary`; the terminal `shown` (the summary unless given). Another run's folder (same
    --run-id) is never touched: only the one this launch started."""
    if not started_by(config.run_dir, config.launch_id):
        # another node's launch started the run folder: this node's logs join its traces there, if it has them
        logs = keep_logs(log_dir, config) if config.nodes > 1 else log_dir
        return RunFailed(shown or summary, logs=worth_naming(logs), traceback=traceback)
    mark_failed(config.run_dir, summary)
    return RunFailed(shown or summary, config.run_dir, worth_naming(keep_logs(log_dir, config)), traceback)


def _outcomes(exc: ChildFailedError, log_dir: Path, config: RunConfig, exits: dict[int, int]) -> list[RankOutcome]:
    """Every local rank's outcome: torch reports one failed process per node (the first it
    finds), so each rank's error.json in the log folder is read too, and each exit status observed (`exits`, by
    local rank)."""
    reported_rank, reported = exc.get_first_failure()
    first_global = reported_rank - reported.local_rank
    failures = dict(exc.failures)
    for path in log_dir.glob("*/attempt_*/*/error.json"):
        local_rank = int(path.parent.name)
        failures.setdefault(
            first_global + local_rank, ProcessFailure(local_rank=local_rank, pid=0, exitcode=1, error_file=str(path))
        )
    return [
        rank_outcome(
            rank, failures.get(rank), rank_stderr(log_dir, rank - first_global), exits.get(rank - first_global)
        )
        for rank in range(first_global, first_global + config.procs_per_node)
    ]


def rank_outcome(rank: int, failure: ProcessFailure | None, stderr: str, exit_code: int | None) -> RankOutcome:
    """Every rank records an error, even if stopped: one without a failure crashed. NCCL's watchdog aborts a rank
    without an error file (its stderr says which collective timed out); faulthandler leaves a crash's stack there."""
    stopped_at, said = main_thread_site(stderr), backend_said(stderr)
    if failure is None:  # torch reports one failed rank per node: the others' ends are observed, or told by their logs
        signum = fatal_signal(stderr)
        return RankOutcome(
            rank,
            "",
            exit_code if exit_code is not None else -signum if signum else None,
            crash_site=crash_site(stderr),
            parted=collective_parted(stderr),
            stopped_at=stopped_at,
            backend_said=said,
        )
    watchdog = WATCHDOG.search(stderr)
    return RankOutcome(
        rank,
        _message(failure) or (watchdog.group(0).strip() if watchdog else ""),
        failure.exitcode,
        failure.timestamp,
        crash_site(stderr),
        _recorded_traceback(failure),
        collective_parted(stderr),
        stopped_at,
        said,
    )


def rank_stderr(log_dir: Path, local_rank: int) -> str:
    return "".join(log.read_text(errors="replace") for log in log_dir.glob(f"*/attempt_*/{local_rank}/stderr.log"))


def _rendezvous_problem(exc: Exception, config: RunConfig) -> Failure:
    endpoint = config.rdzv_endpoint or STANDALONE_ENDPOINT
    name = type(exc).__name__
    setup = failed_setup(f"{name}: {exc}", config)
    if setup:
        return setup
    if "Timeout" in name:
        return RendezvousFailed("timeout", endpoint, config.timeout_s, config.nodes, config.run_id)
    if "Connection" in name:
        return RendezvousFailed("no_store", endpoint, config.timeout_s)
    return RendezvousFailed("other", endpoint, said=f"{name}: {what_went_wrong(str(exc))}")


def _message(failure) -> str:
    message = failure.message
    return what_went_wrong(str(message.get("message", "") if isinstance(message, dict) else message))


def _recorded_traceback(failure: ProcessFailure) -> str:
    """The traceback the rank's error file holds (torch elastic's record of its exception), or ""."""
    message = failure.message
    extra = message.get("extraInfo") if isinstance(message, dict) else None
    return str(extra.get("py_callstack", "")) if isinstance(extra, dict) else ""


def worth_naming(logs: Path) -> Path | None:
    """The worker logs' folder when a file in it holds something; an empty one is no place to look (a temporary
    one is removed)."""
    if any(path.is_file() and path.stat().st_size > 0 for path in logs.rglob("*")):
        return logs
    if logs.name.startswith("commprof-logs-") and logs.parent == Path(tempfile.gettempdir()):
        shutil.rmtree(logs, ignore_errors=True)
    return None


def keep_evidence(hang_dir: Path, log_dir: Path) -> None:
    """The ranks' accounts of a stall, of a script that returned before the others' and of the collective each last
    called, beside their logs."""
    if hang_dir != log_dir:
        for prefix in (EVIDENCE_PREFIX, ENDED_PREFIX, ENTERING_PREFIX):
            for path in hang_dir.glob(f"{prefix}*.json"):
                shutil.copy(path, log_dir / path.name)


def keep_logs(log_dir: Path, config: RunConfig) -> Path:
    """Move worker logs beside the traces, in logs/<host>/."""
    target = config.run_dir / "logs" / socket.gethostname()
    if not config.run_dir.is_dir() or target.exists():
        return log_dir
    try:
        target.parent.mkdir(exist_ok=True)
        shutil.move(str(log_dir), str(target))
    except OSError:
        return log_dir
    return target
