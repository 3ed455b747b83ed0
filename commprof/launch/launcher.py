"""RunConfig -> LaunchConfig -> elastic_launch: torch's own launcher, as torchrun uses it."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
import threading
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Iterator

from torch.distributed import TCPStore
from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

from commprof.backends import by_name
from commprof.config import RunConfig
from commprof.errors import RunFailed, what_went_wrong
from commprof.launch import flight_recorder
from commprof.launch.faults import WATCHDOG, RankOutcome, crash_site, root_cause
from commprof.launch.result import LaunchResult
from commprof.launch.runlog import mark_failed, started_by
from commprof.native_logs import restore_for_workers

# 'localhost:0' is torchrun --standalone: the c10d store binds a free port itself.
STANDALONE_ENDPOINT = "localhost:0"
SHUTDOWN_GRACE_S = 15  # a stopped rank's time to write the trace it was recording
ENDPOINT_PROBE_S = 3


def launch_config(config: RunConfig, log_dir: Path) -> LaunchConfig:
    timeout = max(1, int(config.timeout_s))
    return LaunchConfig(
        min_nodes=config.nodes,
        max_nodes=config.nodes,
        nproc_per_node=config.procs_per_node,
        run_id=config.run_id,
        rdzv_backend="c10d",
        rdzv_endpoint=config.rdzv_endpoint or STANDALONE_ENDPOINT,
        # join: every node must arrive within the timeout; read: each store operation
        rdzv_configs={"join_timeout": timeout, "read_timeout": timeout, "close_timeout": min(timeout, 30)},
        max_restarts=0,
        monitor_interval=0.1,
        shutdown_timeout=SHUTDOWN_GRACE_S,
        logs_specs=DefaultLogsSpecs(log_dir=str(log_dir), redirects=Std.ALL),
    )


def launch(config: RunConfig, entrypoint: Callable[..., Any] | str, args: tuple[Any, ...]) -> LaunchResult:
    """Run `entrypoint(*args)` on every rank of this node (through launch.job.run_job): a function, or a program
    (a path) started with those arguments; worker output goes to <run dir>/logs/<host>/.

    On failure: RunFailed naming the rank and cause; the run folder (if this launch started it)
    keeps every trace written, and its run.json is marked failed."""
    for name in ("torch.distributed.elastic", "torch.multiprocessing"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    _check_endpoint(config.rdzv_endpoint)
    restore_for_workers()
    log_dir = Path(tempfile.mkdtemp(prefix="commprof-logs-"))
    try:
        with _workers_environment(
            flight_recorder.environment(log_dir) if by_name(config.backend).flight_recorder else {}
        ):
            results = elastic_launch(launch_config(config, log_dir), entrypoint)(*args)
    except ChildFailedError as exc:
        raise _failed(config, _failure_summary(exc, log_dir, config), log_dir) from None
    except Exception as exc:  # rendezvous timeouts and agent errors surface as various types
        raise _failed(config, _rendezvous_problem(exc, config), log_dir) from None
    _keep_logs(log_dir, config)
    # a function returns where it wrote; a program returns nothing, and its results are keyed by global rank
    first = next(iter(results.values())) or {"run_id": config.run_id, "run_dir": str(config.run_dir)}
    return LaunchResult(first["run_id"], Path(first["run_dir"]), tuple(sorted(results)))


@contextmanager
def _workers_environment(variables: dict[str, str]) -> Iterator[None]:
    """Variables the workers inherit for this launch only; what the user set wins."""
    added = {name: value for name, value in variables.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _failed(config: RunConfig, summary: str, log_dir: Path) -> RunFailed:
    """Another run's folder (same --run-id) is never touched: only the one this launch started."""
    if not started_by(config.run_dir, config.launch_id):
        return RunFailed(f"{summary} (worker logs: {log_dir})")
    mark_failed(config.run_dir, summary)
    return RunFailed(f"{summary} (worker logs: {_keep_logs(log_dir, config)})", run_dir=config.run_dir)


def _failure_summary(exc: ChildFailedError, log_dir: Path, config: RunConfig) -> str:
    """Every local rank's outcome: torch reports one failed process per node (the first it
    finds), so each rank's error.json in the log folder is read too."""
    reported_rank, reported = exc.get_first_failure()
    first_global = reported_rank - reported.local_rank
    failures = dict(exc.failures)
    for path in log_dir.glob("*/attempt_*/*/error.json"):
        local_rank = int(path.parent.name)
        failures.setdefault(
            first_global + local_rank, ProcessFailure(local_rank=local_rank, pid=0, exitcode=1, error_file=str(path))
        )
    outcomes = [
        _outcome(rank, failures.get(rank), _stderr(log_dir, rank - first_global))
        for rank in range(first_global, first_global + config.procs_per_node)
    ]
    never_arrived = flight_recorder.who_never_arrived(flight_recorder.read_dumps(log_dir))
    return root_cause(outcomes, socket.gethostname(), config.timeout_s, never_arrived)


def _outcome(rank: int, failure: ProcessFailure | None, stderr: str) -> RankOutcome:
    """Every rank records an error, even if stopped: one without a failure crashed. NCCL's watchdog aborts a rank
    without an error file (its stderr says which collective timed out); faulthandler leaves a crash's stack there."""
    if failure is None:
        return RankOutcome(rank, "", None, crash_site=crash_site(stderr))
    watchdog = WATCHDOG.search(stderr)
    return RankOutcome(
        rank,
        _message(failure) or (watchdog.group(0).strip() if watchdog else ""),
        failure.exitcode,
        failure.timestamp,
        crash_site(stderr),
    )


def _stderr(log_dir: Path, local_rank: int) -> str:
    return "".join(log.read_text(errors="replace") for log in log_dir.glob(f"*/attempt_*/{local_rank}/stderr.log"))


def _rendezvous_problem(exc: Exception, config: RunConfig) -> str:
    endpoint = config.rdzv_endpoint or STANDALONE_ENDPOINT
    name = type(exc).__name__
    if "Timeout" in name:
        return (
            f"rendezvous at {endpoint} timed out after {config.timeout_s:g} s: not all {config.nodes} nodes "
            f"joined run {config.run_id!r} (start commprof run with the same --nodes, --run-id and "
            f"--rdzv-endpoint on every node)"
        )
    if "Connection" in name:
        return f"rendezvous at {endpoint} failed: no c10d store answered there within {config.timeout_s:g} s"
    return f"launch failed: {name}: {what_went_wrong(str(exc))}"


def _check_endpoint(endpoint: str | None) -> None:
    """Fail fast when the rendezvous port is taken by a program that is not a c10d store; nothing
    listening is fine (this node will host the store, or node 0 has not started yet)."""
    if endpoint is None:
        return
    host, _, port = endpoint.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except (OSError, ValueError):
        return
    answered = threading.Event()

    def probe() -> None:  # a store answers in milliseconds; a foreign program may never answer at all
        try:
            TCPStore(host, int(port), is_master=False, timeout=timedelta(seconds=ENDPOINT_PROBE_S))
            answered.set()
        except Exception:  # the store client raises several types; any of them means no store answered
            pass

    threading.Thread(target=probe, daemon=True).start()
    if not answered.wait(ENDPOINT_PROBE_S):
        raise RunFailed(
            f"rendezvous endpoint {endpoint}: port {port} is in use by a program that is not a "
            "c10d store; choose another port for --rdzv-endpoint"
        ) from None


def _message(failure) -> str:
    message = failure.message
    return what_went_wrong(str(message.get("message", "") if isinstance(message, dict) else message))


def _keep_logs(log_dir: Path, config: RunConfig) -> Path:
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
