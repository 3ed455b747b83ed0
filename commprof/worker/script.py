"""`commprof run -- train.py args`: the user's training script, unmodified, on every rank.

Each rank is started by the same elastic launch as a built-in run: on CPU forked from commprof's fork server
(`forked_main`, launch/forkserver.py), on GPUs as its own Python program (`python -m commprof.worker.script PAYLOAD
PROGRESS`), with the environment torchrun gives a script
(RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, TORCHELASTIC_*, ...). Before it runs the script as
`__main__`, with the script's own argv and working directory, it installs:
- torch's global optimizer-step hook: a step is one optimizer step (of the first optimizer that
  steps); the profiler's schedule counts them, and the profiler stops after its active window so the
  rest of the job runs at full speed;
- DDP overrides (instrument.ddp.DDPOverrides): the DDP options given on the command line reach every
  DistributedDataParallel the script builds.
Each step goes to the rank's step log; at the end the log also holds what the rank learned (model,
DDP, optimizers), and the launching commprof completes run.json from the logs. `--max-steps` ends the
script after that many steps: the trace is written, the process group destroyed, the rank exits 0.
Subprocesses the script starts (DataLoader workers) are left alone.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import re
import runpy
import signal
import sys
import types
from pathlib import Path
from typing import Any

from torch.distributed.elastic.multiprocessing.errors import get_error_handler

from commprof.config import RunConfig
from commprof.errors import what_went_wrong
from commprof.instrument.hang_watch import account_at_exit
from commprof.launch.faults import INTERRUPTED_MESSAGE
from commprof.launch.forkserver import exit_returning
from commprof.results.run_record import Skipped
from commprof.worker.rank import RankStopped, ignore_stops
from commprof.worker.script_session import MaxStepsReached, ScriptSession

_LOCAL_RANK_ARGUMENT = re.compile(r"""["']--local[_-]rank["']""")


def with_local_rank(argv: list[str], source: str, local_rank: str) -> list[str]:
    """The script's arguments, with `--local_rank=N` added where its source declares that argument (as DeepSpeed's
    launcher and torch.distributed.launch pass it; torchrun sets LOCAL_RANK only) and its arguments do not give it."""
    declared = _LOCAL_RANK_ARGUMENT.search(source)
    given = any(a.startswith(("--local_rank", "--local-rank")) for a in argv[1:])
    return argv if declared is None or given else [*argv, f"{declared.group(0)[1:-1]}={local_rank}"]


def run_script(script: tuple[str, ...]) -> None:
    """Run `train.py args` (or `-m package.module args`) as `__main__`, as `python` would."""
    if script[0] == "-m":  # as `python -m`: the working directory first on the path, the module (or a
        sys.path.insert(0, os.getcwd())  # package's __main__) run with its package, so relative imports work
        sys.argv = [script[1], *script[2:]]
        runpy.run_module(script[1], run_name="__main__", alter_sys=True)
        return
    path = Path(script[0]).resolve()
    sys.path.insert(0, str(path.parent))
    sys.argv = with_local_rank(list(script), path.read_text(errors="replace"), os.environ.get("LOCAL_RANK", "0"))
    main = types.ModuleType("__main__")  # replaces the bootstrap: spawned children find the script as __main__
    main.__dict__.update(__file__=str(path), __builtins__=__builtins__, __spec__=None)
    sys.modules["__main__"] = main
    exec(compile(path.read_bytes(), str(path), "exec"), main.__dict__)


def main(payload_path: str, progress_path: str) -> None:
    """A rank as its own Python program (`python -m commprof.worker.script`, as torchrun starts a script)."""
    faulthandler.enable(all_threads=True)  # a crash leaves its Python stack in the worker's log
    code = run_rank(RunConfig.from_dict(json.loads(Path(payload_path).read_text())), Path(progress_path))
    _exit(code)


def forked_main(payload: dict[str, Any], progress_path: str) -> None:
    """A rank forked by torch's elastic agent from commprof's fork server (launch/forkserver.py): it ends when its
    script and commprof's work after it are done, 0 when the script succeeded, else with its code (the error recorded
    for the launcher)."""
    faulthandler.enable(all_threads=True)
    code = run_rank(RunConfig.from_dict(payload), Path(progress_path))
    if code:
        _exit(code)
    exit_returning()  # gone as a program that returned would be (its sockets closed)


def _exit(code: int) -> None:
    """Ends the process with `code` (negative: killed by that signal, as a stopped script is), skipping the teardown
    of a process group whose peers may be gone."""
    sys.stdout.flush()
    sys.stderr.flush()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


def run_rank(config: RunConfig, progress_path: Path) -> int:
    """This process's rank of the script, start to end: 0 when its script succeeded; the script's own exit code
    (sys.exit), or 1 with the error recorded for the launcher, when it did not. What commprof does after the script
    returned never changes that."""
    for stream in (sys.stdout, sys.stderr):  # its lines reach the log, and the terminal, as they come
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)
    session = ScriptSession(config, progress_path)
    exit_code = 1
    try:
        session.start()
        try:
            run_script(config.script)
        except MaxStepsReached:
            pass
        except SystemExit as exc:  # sys.exit(code): the rank exits with it, as `python train.py` would
            if exc.code not in (None, 0):
                exit_code = exc.code if isinstance(exc.code, int) else 1
                if not isinstance(exc.code, int):  # a message: printed, and 1
                    print(exc.code, file=sys.stderr)
                raise RuntimeError(f"the script exited with code {exit_code}") from None
        session.script_succeeded()
    except BaseException as exc:  # record why for the launcher, keep what was measured, leave at once
        _failed(session, exc)
        if isinstance(exc, RankStopped):  # ends by the launcher's signal, as a script it stopped would
            return -(signal.SIGINT if exc.args and exc.args[0] == INTERRUPTED_MESSAGE else signal.SIGTERM)
        return exit_code
    _after_success(session)
    return 0


def _after_success(session: ScriptSession) -> None:
    """The script succeeded on this rank: what was measured written, and, once every rank's script returned,
    commprof's own measurements; a stop meanwhile (a peer failed) ends the rank as its script did."""
    try:
        session.finish()
        if session.script_returned():
            session.measure()
        else:
            session.write_measured()
    except BaseException as exc:  # commprof's own work: said, never the rank's failure
        ignore_stops()
        session.skipped = Skipped(what_went_wrong(str(exc)))
        session.end.left_because = session.end.left_because or what_went_wrong(str(exc))
        session.end.write(session.log.steps_done)
        with contextlib.suppress(BaseException):
            session.write_measured()
    sys.stdout.flush()
    sys.stderr.flush()


def _failed(session: ScriptSession, exc: BaseException) -> None:
    """Why, recorded for the launcher; what was measured kept; the other ranks told not to wait for this one."""
    ignore_stops()  # the launcher stops this rank as its peers fail: the record must not be cut short
    session.end.failed(what_went_wrong(str(exc)))
    try:
        account_at_exit(exc)
        session.finish(ended=False)
    except BaseException:  # the failure itself is what must be reported
        pass
    get_error_handler().record_exception(exc)
    if not os.environ.get("TORCHELASTIC_ERROR_FILE"):  # not under the elastic launch: say it here
        print(f"error: rank {session.rank} on {session.host} failed: {what_went_wrong(str(exc))}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
