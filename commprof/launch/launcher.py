"""RunConfig -> LaunchConfig -> elastic_launch: torch's own launcher, as torchrun uses it."""

from __future__ import annotations

import logging
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure
from torch.distributed.launcher.api import LaunchConfig, elastic_launch

from commprof.config import RunConfig
from commprof.errors import RunFailed
from commprof.launch.worker import worker_main

# 'localhost:0' is torchrun --standalone: the c10d store binds a free port itself.
# Errors a rank sees because another rank died first: never the root cause.
_PEER_GONE = re.compile(r"Connection (closed|reset) by peer|Broken pipe|remote worker|communicator was aborted|"
                        r"ProcessGroup.*(aborted|terminated)", re.IGNORECASE)
STANDALONE_ENDPOINT = "localhost:0"


@dataclass(frozen=True)
class LaunchResult:
    run_id: str
    run_dir: Path
    ranks_here: tuple[int, ...]

    @property
    def has_rank_zero(self) -> bool:
        return 0 in self.ranks_here


def launch_config(config: RunConfig, log_dir: Path) -> LaunchConfig:
    return LaunchConfig(
        min_nodes=config.nodes,
        max_nodes=config.nodes,
        nproc_per_node=config.procs_per_node,
        run_id=config.run_id,
        rdzv_backend="c10d",
        rdzv_endpoint=config.rdzv_endpoint or STANDALONE_ENDPOINT,
        rdzv_configs={"timeout": int(config.timeout_s)},
        max_restarts=0,
        monitor_interval=0.1,
        logs_specs=DefaultLogsSpecs(log_dir=str(log_dir), redirects=Std.ALL),
    )


def launch(config: RunConfig, progress_path: Path, entrypoint: Callable[..., Any] = worker_main,
           payload: dict[str, Any] | None = None) -> LaunchResult:
    """Run `entrypoint(payload, progress_path)` on every rank of this node (payload: the config
    as a dict by default); worker output goes to <run dir>/logs/<host>/."""
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    log_dir = Path(tempfile.mkdtemp(prefix="commprof-logs-"))
    try:
        results = elastic_launch(launch_config(config, log_dir), entrypoint)(payload or config.to_dict(), str(progress_path))
    except ChildFailedError as exc:
        summary = _failure_summary(exc, log_dir)
        raise RunFailed(f"{summary} (worker logs: {_keep_logs(log_dir, config, False)})") from None
    except Exception as exc:  # rendezvous timeouts and agent errors surface as various types
        raise RunFailed(f"launch failed: {type(exc).__name__}: {_last_line(str(exc))}") from None
    _keep_logs(log_dir, config, True)
    first = next(iter(results.values()))
    return LaunchResult(first["run_id"], Path(first["run_dir"]), tuple(sorted(r["rank"] for r in results.values())))


def _message(failure) -> str:
    message = failure.message
    return _last_line(str(message.get("message", "") if isinstance(message, dict) else message))


def _failure_summary(exc: ChildFailedError, log_dir: Path) -> str:
    """The root cause: the earliest failure that is not a consequence of a peer dying.

    torch reports one failed process per node (the first it finds), so every rank's
    error.json in the log folder is read too."""
    reported_rank, reported = exc.get_first_failure()
    first_global = reported_rank - reported.local_rank
    failures = {reported_rank: reported}
    for path in log_dir.glob("*/attempt_*/*/error.json"):
        local_rank = int(path.parent.name)
        failures.setdefault(first_global + local_rank,
                            ProcessFailure(local_rank=local_rank, pid=0, exitcode=1, error_file=str(path)))
    rank, failure = min(failures.items(),
                        key=lambda item: (bool(_PEER_GONE.search(_message(item[1]))), item[1].timestamp, item[0]))
    cause = _message(failure)
    if failure.exitcode < 0:
        signal_text = f"killed by signal {-failure.exitcode}"
        cause = f"{cause} ({signal_text})" if cause and "Signal" not in cause else signal_text
    return f"rank {rank} on {socket.gethostname()} failed: {cause or f'exit code {failure.exitcode}'}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _keep_logs(log_dir: Path, config: RunConfig, succeeded: bool) -> Path:
    """Move worker logs beside the traces; after a failure, only into a folder no finished run owns."""
    target = config.run_dir / "logs" / socket.gethostname()
    foreign = not succeeded and (config.run_dir / "run.json").exists()
    if not config.run_dir.is_dir() or target.exists() or foreign:
        return log_dir
    try:
        target.parent.mkdir(exist_ok=True)
        shutil.move(str(log_dir), str(target))
    except OSError:
        return log_dir
    return target
