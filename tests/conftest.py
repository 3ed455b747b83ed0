import collections
import contextlib
import faulthandler
import fcntl
import functools
import io
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest
import typer.main
import typer.testing

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "tests" / "data" / "traces"  # real traces, in the repo (README there)
# the 54 MB size benchmark stays outside the repo; tests that need it skip without it
LARGE_TRACE = REPO.parent / "shared" / "traces" / "nccl-v100-rank1-of-2-large"


def needs_large_trace(test):
    """Reads the 54 MB benchmark trace: slow (seconds each), and skipped where ../shared/traces lacks it."""
    skip = pytest.mark.skipif(not LARGE_TRACE.is_dir(), reason="the 54 MB benchmark trace is not in ../shared/traces")
    return pytest.mark.slow(skip(test))


FAST_RUN = ["--steps", "8", "--schedule", "2,1,4", "--batch-size", "8"]


def decoded_whole(path: Path):
    """The classified events of a real trace decoded whole: what streaming it (tests/test_stream.py) and decoding it
    in pieces (tests/test_chunked.py) must equal; kept, once a worker, for the small traces in tests/data."""
    return _kept_whole(path) if TRACES in path.parents else _whole(path)


def _whole(path: Path):
    from commprof.trace.classify import classify
    from commprof.trace.parse import parse_trace

    return classify(path, parse_trace(path))


_kept_whole = functools.cache(_whole)


def commprof(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the installed CLI as a user would, in its own process."""
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "commprof", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def commprof_here(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """`commprof *args` run by this pytest worker as the installed command runs it (`guarded_main`): the ranks are
    real processes, forked from a fork server this worker starts once, so that only the first launch pays for
    importing torch in commprof and in the fork server (a launch in its own process: 7.7 s, then 3.2-3.5 s each:
    docs/benchmarks.md). For tests of what a launch measures and reports; `commprof()` for the contracts of
    commprof's own process (its ending, its signals, its environment). A command still going after `timeout` ends
    the worker, every thread's stack printed (pytest-xdist names the test it was running).

    The command's process pools (the traces decoded a file a process, the figures' process) are spawned, not forked:
    a fork copies this worker as it is, with torch and what earlier tests left in it, and one such forked process
    died in its garbage collection (a segmentation fault, CI13: docs/benchmarks.md)."""
    from commprof.cli import console
    from commprof.cli.app import guarded_main

    out, err, here, width = io.StringIO(), io.StringIO(), os.getcwd(), console.out.width
    method = multiprocessing.get_start_method(allow_none=True)
    os.chdir(cwd)
    console.out.width = 120  # as COLUMNS=120 sets it for `commprof()`
    multiprocessing.set_start_method("spawn", force=True)
    faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)
    try:
        with mock.patch.dict(os.environ), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = guarded_main(list(args))
    finally:
        faulthandler.cancel_dump_traceback_later()
        multiprocessing.set_start_method(method, force=True)
        os.chdir(here)
        console.out.width = width
    return subprocess.CompletedProcess(["commprof", *args], code, out.getvalue(), err.getvalue())


def shared_temp(tmp_path_factory) -> Path:
    """pytest's temporary folder of this session, the one every pytest-xdist worker's own folder is in."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def once_for_every_worker(
    tmp_path_factory, name: str, *args: str, runner=commprof
) -> tuple[Path, subprocess.CompletedProcess]:
    """`commprof *args` in a folder of its own, run once however many pytest-xdist workers ask for it (each worker
    is a session of its own): the first runs it (`runner`: in its own process, or `commprof_here`), holding a lock
    in the folder the workers share; the others wait for it and read what it printed."""
    root = shared_temp(tmp_path_factory)
    cwd, saved = root / name, root / f"{name}.result.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            cwd.mkdir(exist_ok=True)  # left by a worker whose run failed: this one runs it again, and says why
            result = runner(*args, cwd=cwd)
            assert result.returncode == 0, result.stderr
            saved.write_text(json.dumps([result.returncode, result.stdout, result.stderr]))
    returncode, stdout, stderr = json.loads(saved.read_text())
    return cwd, subprocess.CompletedProcess(["commprof", *args], returncode, stdout, stderr)


@pytest.fixture(scope="session")
def cpu_run(tmp_path_factory):
    """One real 2-rank Gloo run through the installed CLI in its own process, shared by the tests that inspect its
    output."""
    # one step more than FAST_RUN: step 7 waits for the traces, step 8 is the unprofiled one
    return once_for_every_worker(tmp_path_factory, "run", "run", "--steps", "9", *FAST_RUN[2:], "--run-id", "e2e")


@pytest.fixture(scope="session")
def capped_script_run(tmp_path_factory):
    """A user's script on 2 real Gloo ranks, unmodified, ended by --max-steps 8 with a bucket override, not quiet:
    shared by the tests of scripts and the test of the progress lines a log gets."""
    script = REPO / "tests" / "data" / "scripts" / "train_epochs.py"
    args = ["--max-steps", "8", "--schedule", "2,1,4", "--bucket-cap-mb", "0.01", "--", str(script), "--epochs", "50"]
    return once_for_every_worker(tmp_path_factory, "script", "run", "--run-id", "s", *args, runner=commprof_here)


@pytest.fixture(scope="session")
def strategies_compared(tmp_path_factory):
    """`commprof compare --strategies ddp,fsdp` on the transformer, 2 samples a rank: its FSDP row is a whole run
    (reports/ways/fsdp/), read by the tests of compare and of FSDP runs."""
    cwd = tmp_path_factory.mktemp("ways")
    args = ["--strategies", "ddp,fsdp", "--model", "transformer", "--run-id", "ways", "--json", "--repeats", "2"]
    args += [*FAST_RUN[:-1], "2"]
    result = commprof_here("compare", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return cwd, result


def load_json(path: Path):
    return json.loads(path.read_text())


PLANTED_GAIN = {"value": 2.0, "low": 1.0, "high": 3.0}


def planted_finding(kind: str, title: str, setting: dict) -> dict:
    """A finding as report.json holds it, predicting 2.0 ms (interval 1.0 to 3.0), 3% of the step: what advise
    tests give a run's report so that advise has a known prediction to check."""
    gain = {"value": 2.0, "low": 1.0, "high": 3.0}
    return {
        "kind": kind,
        "title": title,
        "evidence": "",
        "action": "",
        "gain_ms": gain,
        "gain_pct": 3.0,
        "setting": setting,
    }


def plant_findings(report_folder: Path, *findings: dict) -> None:
    """Replace a written report's findings with these."""
    path = report_folder / "report.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "findings": list(findings)}))


SLOW_S = 10  # a launch, about


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject.toml): a worker per core for the fast tier, whose tests only compute; one more for a run
    with the slow tests, as measured (two workers took 818 s, three 639 s, four 668 s: docs/benchmarks.md)."""
    cores = len(os.sched_getaffinity(0))
    return cores if config.option.markexpr == "not slow" else cores + 1


# a module whose every test is slow: `pytestmark = pytest.mark.slow`, alone or first in a list
WHOLLY_SLOW = re.compile(r"^pytestmark = \[?\s*pytest\.mark\.slow\b", re.MULTILINE)


def pytest_unconfigure(config) -> None:
    """pytest-xdist's controller, once its workers are done, removes their lock files (`workers_lock`)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        for suffix in ("lock", "turnstile"):
            (LOCKS / f"commprof-tests-{os.getpid()}.{suffix}").unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def _temporary_folder(tmp_path_factory):
    """The temporary folder of the session's launches, in commprof's process and in those it starts, is one in
    pytest's (which keeps its last three sessions'): what a failed run keeps for its user (its logs) and what a
    process stopped on purpose leaves goes with it."""
    folder = shared_temp(tmp_path_factory) / "tmp"
    folder.mkdir(exist_ok=True)
    with mock.patch.dict(os.environ, {"TMPDIR": str(folder)}):
        tempfile.tempdir = None  # read TMPDIR again
        try:
            yield
        finally:
            tempfile.tempdir = None


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """The fast tier (`-m "not slow"`) does not import the modules whose every test is slow: each worker imports
    every module it collects, and these would cost it seconds to be deselected."""
    if config.option.markexpr != "not slow" or not collection_path.name.startswith("test_"):
        return None
    if collection_path.suffix == ".py" and WHOLLY_SLOW.search(collection_path.read_text()):
        return True
    return None


def pytest_collection_modifyitems(items):
    """Tests of the shared real run are slow; those marked `cuda` skip, with the reason, where torch sees no CUDA
    GPU (the one switch for the GPU tests); the heaviest files run first."""
    import torch

    no_gpu = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False here")
    cuda = torch.cuda.is_available()
    for item in items:
        if {"cpu_run", "capped_script_run", "strategies_compared"} & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)
        if "cuda" in item.keywords and not cuda:
            item.add_marker(no_gpu)
    # the longest files first (a stable sort: each file's tests stay together and in order): the workers take files
    # as they finish one (--dist loadfile), and a long file taken last would leave the others idle. A file's length:
    # its tests marked `takes` (the seconds they need, and why), SLOW_S for each other slow test. Files with solo
    # tests after the others: a solo test holds the other workers' tests off, not their collection
    length: collections.Counter = collections.Counter()
    for item in items:
        takes = item.get_closest_marker("takes")
        length[item.path] += takes.args[0] if takes else SLOW_S if item.get_closest_marker("slow") else 0
    solo = {item.path for item in items if _is_solo(item)}
    items.sort(key=lambda item: (item.path in solo, -length[item.path]))


class _Alone:
    """The workers' lock held exclusively, kept from one solo test to the solo test after it on this worker."""

    held: contextlib.ExitStack | None = None

    @classmethod
    def hold(cls) -> None:
        if cls.held is None:
            cls.held = contextlib.ExitStack()
            cls.held.enter_context(workers_lock(exclusive=True))

    @classmethod
    def release(cls) -> None:
        if cls.held is not None:
            cls.held.close()
            cls.held = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist (three workers, pyproject.toml), a test marked `solo` (timing that another test's ranks on
    the same cores would distort: the positive controls, the link's measured rate) runs alone: it holds the workers'
    shared lock exclusively, from its fixtures' setup to their teardown, and every other test holds it shared. A
    worker keeps the lock from a solo test to the solo test after it: each hand-over waits for the other worker's
    test to end, with a core idle meanwhile."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    solo = _is_solo(item)
    if not solo:
        with workers_lock(exclusive=False):
            yield
        return
    _Alone.hold()
    try:
        yield
    finally:
        if nextitem is None or not _is_solo(nextitem):
            _Alone.release()


def _is_solo(item) -> bool:
    return item.get_closest_marker("solo") is not None


LOCKS = Path(tempfile.gettempdir())  # the workers' lock files, named after pytest-xdist's controller


@contextlib.contextmanager
def workers_lock(exclusive: bool, folder: Path = LOCKS):
    """A readers-writer lock between the workers (children of one pytest): a writer waiting at the turnstile lets
    no new reader in, so a solo test waits for the test running beside it, never for a stream of them."""
    base = folder / f"commprof-tests-{os.getppid()}"
    with open(f"{base}.turnstile", "a") as turnstile, open(f"{base}.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if not exclusive:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


PARSER_BUILT_ONCE = functools.cache(typer.main.get_command)


@pytest.fixture(autouse=True)
def _cli_parser_built_once(monkeypatch):
    """Typer builds the click parser of the whole CLI anew for every call of the app (a tenth of a second): tests
    that call `main` in-process, a hundred times or more, build it once."""
    monkeypatch.setattr(typer.main, "get_command", PARSER_BUILT_ONCE)
    monkeypatch.setattr(typer.testing, "_get_command", PARSER_BUILT_ONCE)


@pytest.fixture
def no_figures(monkeypatch):
    """For a test of an analysis's facts or files: its report's PNG figures, two fifths of the time of analysing a
    real trace, are not drawn (tests/test_render_whole_run.py and test_reports_output.py draw and check them)."""
    from commprof.render import plots

    monkeypatch.setattr(plots, "figures", lambda report: {})


class ProcessStarted(AssertionError):
    pass


@pytest.fixture(scope="session")
def _matplotlib_font_cache():
    """matplotlib builds its font cache on its first import on a machine, running fc-list: build it before the
    guard below, so that a fresh machine's first run of the fast tier passes as its second does."""
    import matplotlib.font_manager  # noqa: F401


@pytest.fixture(autouse=True)
def _fast_tier_starts_no_process(request, monkeypatch, _matplotlib_font_cache):
    """A test not marked slow may not start a process: the fast tier stays fast and launches nothing."""
    if request.node.get_closest_marker("slow"):
        return

    def refuse(*args, **kwargs):
        raise ProcessStarted(f"{request.node.nodeid} started a process; mark it @pytest.mark.slow")

    import multiprocessing.process

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    monkeypatch.setattr(os, "fork", refuse)


def run_record(schedule: tuple[int, int, int] = (6, 2, 10), step_ms: list[list[float]] = (), **fields):
    """A run.json record with these ranks' step times (rank i: step_ms[i]) under this profiler schedule."""
    from commprof.config import ProfileSchedule, RunConfig
    from commprof.results.run_record import RankRecord, RunRecord

    wait, warmup, active = schedule
    config = RunConfig(run_id="t", schedule=ProfileSchedule(wait, warmup, active), steps=wait + warmup + active)
    ranks = [RankRecord(rank=i, step_ms=list(steps)) for i, steps in enumerate(step_ms)]
    return RunRecord(run_id="t", config=config, ranks=ranks, **fields)


def run_summary(bucket_cap_mb: float = 25.0, **fields):
    """report.json's "run" for a built-in run with this bucket cap (or a script's, with `script` and `ddp_built`)."""
    from commprof.config import RunConfig
    from commprof.results.run_record import RunSummary
    from commprof.settings import DDPOptions

    return RunSummary(run_id="t", config=RunConfig(run_id="t", ddp=DDPOptions(bucket_cap_mb=bucket_cap_mb)), **fields)


def built_of(run: dict, kind: str) -> list[dict]:
    """What a run.json (or a report's "run") records its job built of one kind: ddp, fsdp, deepspeed, horovod."""
    return [b for b in run["job"]["built"] if b["kind"] == kind]
