"""Bad input to every command, and the start of the line each must print (exit code 2).

tests/test_bad_inputs.py checks every case; `python tests/bad_inputs.py` prints the table kept
in docs/reliability.md."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

# (command line, what the one-line error must contain)
CASES: list[tuple[list[str], str]] = [
    (["run", "--bogus"], "No such option: --bogus"),
    (["run", "--steps", "abc"], "Invalid value for '--steps'"),
    (["run", "--procs", "0"], "--procs must be >= 1"),
    (["run", "--batch-size", "0"], "--batch-size must be >= 1"),
    (["run", "--bucket-cap-mb", "-5"], "--bucket-cap-mb must be > 0"),
    (["run", "--timeout", "0"], "--timeout must be > 0"),
    (["run", "--steps", "5"], "smaller than the profiler schedule"),
    (["run", "--schedule", "1,2"], "WAIT,WARMUP,ACTIVE"),
    (["run", "--gpus", "2", "--device", "cpu"], "contradict"),
    (["run", "--backend", "nccl"], "--backend nccl: NCCL has no CPU transport; on CPU use --backend gloo or mpi"),
    (["run", "--static-graph", "--grad-accum", "2"], "pytorch/pytorch#143580"),
    (["run", "--nodes", "2", "--run-id", "x"], "--nodes > 1 needs --rdzv-endpoint"),
    (["run", "--nodes", "2"], "--nodes > 1: pass the same --run-id NAME on every node"),
    (["run", "--emit-sbatch", "--nodes", "2"], "--emit-sbatch needs --gpus N (GPU ranks per node) or --procs N"),
    (["run", "--", "missing.py"], "missing.py: no such script"),
    (["run", "--", "-m", "no_such_package.train"], "-m no_such_package.train: no such module here"),
    (["run", "--batch-size", "8", "--grad-accum", "2", "--", "afile"], "--batch-size, --grad-accum: not with a script"),
    (["run", "--steps", "20", "--grad-accum", "1", "--", "afile"], "--steps, --grad-accum: not with a script"),
    (["run", "--max-steps", "3", "--", "afile"], "--max-steps 3 is smaller than the profiler schedule"),
    (["run", "--max-steps", "30"], "--max-steps is for a script"),
    (["run", "--nodes", "2", "--run-id", "x", "--rdzv-endpoint", "head"], "--rdzv-endpoint must be HOST:PORT"),
    (["run", "--model", "resnet9000"], "unknown model 'resnet9000'"),
    (["run", "--model", "missing.py:build"], "file missing.py not found"),
    (["run", "--model", "broken.py:build"], "broken.py"),
    (["run", "--model", "nobuild.py:build"], "build"),
    (["run", "--local-addr", "nosuch.invalid"], "--local-addr nosuch.invalid does not resolve"),
    (["run", "--local-addr", "192.0.2.1"], "--local-addr 192.0.2.1 is not an address of this host"),
    (
        ["run", "--nodes", "2", "--run-id", "x", "--rdzv-endpoint", "nosuch.invalid:29400"],
        "rendezvous endpoint nosuch.invalid:29400: the host 'nosuch.invalid' does not resolve on this node",
    ),
    (["GLOO_SOCKET_IFNAME=cps7-none", "run"], "GLOO_SOCKET_IFNAME=cps7-none: this host has no interface cps7-none"),
    (["run", "--reports-dir", "afile"], "afile exists and is not a folder"),
    (["run", "--traces-dir", "afile/traces"], "afile/traces: cannot write there (afile is a file, not a folder)"),
    (["sweep", "--bucket-cap-mb", "1,abc"], "--bucket-cap-mb"),
    (["sweep", "--bucket-cap-mb", "0,25"], "> 0"),
    (["sweep", "--repeats", "0"], "--repeats"),
    (["sweep", "--reports-dir", "afile"], "afile exists and is not a folder"),
    (["tune", "--repeats", "0"], "--repeats"),
    (["tune", "--model", "broken.py:build"], "broken.py"),
    (["analyze", "missing"], "missing: no such file or folder"),
    (["analyze", "notjson.json"], "notjson.json: not valid JSON"),
    (["analyze", "empty"], "empty: no trace files"),
    (["analyze", "trace.json", "--workers", "0"], "--workers"),
    (["analyze", "trace.json", "--reports-dir", "afile"], "afile exists and is not a folder"),
    (["analyze", "trace.json", "--reports-dir", "afile/r"], "afile/r: cannot write there (afile is a file, not a"),
    (["report", "missing.json"], "missing.json: no such report; give a report.json, its folder, or a run id"),
    (["report", "notjson.json"], "not valid JSON"),
    (["report", "notreport.json"], "not a commprof report"),
    (["report", "notreport.json", "--format", "pdf"], "--format must be one of"),
    (["view", "missing"], "missing"),
    (["view", "--port", "70000"], "--port must be 0..65535"),
    (["diff", "notreport.json", "missing.json"], "not a commprof report"),
    (["diff", "notreport.json"], "diff takes two reports, or several on each side of 'vs'; got 1"),
    (["diff", "notreport.json", "vs"], "at least one report on each side of one 'vs'"),
    (["bench", "--backend", "smoke-signals"], "smoke-signals"),
    (["bench", "--min-bytes", "1Q"], "1Q"),
    (["bench", "--min-bytes", "16M", "--max-bytes", "1K"], "--min-bytes"),
    (["bench", "--factor", "1"], "--factor"),
    (["bench", "--bursts", "1"], "--bursts must be >= 2"),
    (["bench", "--procs", "1"], "--procs must be >= 2"),
    (["bench", "--ops", "all_reduce,teleport"], "teleport"),
    (["bench", "--dtype", "float8"], "--dtype"),
    (["bench", "--reports-dir", "afile"], "afile exists and is not a folder"),
    (["backends", "--timeout", "0"], "--timeout must be > 0"),
    (["compare", "--backends", "gloo"], "--backends needs at least two different backends"),
    (["compare", "--backends", "gloo,carrier-pigeon"], "carrier-pigeon"),
    (["compare", "--reports-dir", "afile"], "afile exists and is not a folder"),
    (["scale", "--world-sizes", "2"], "--world-sizes needs at least two sizes"),
    (["scale", "--world-sizes", "1,two"], "--world-sizes must be a comma-separated list"),
    (["scale", "--world-sizes", "0,2"], "world sizes must be >= 1"),
    (["scale", "--strong", "--world-sizes", "1,3"], "does not divide evenly over 3 ranks"),
    (["scale", "--link", "fast"], "--link must look like 25GB/s,5us"),
    (["scale", "--predict", "16,x"], "--predict must be a comma-separated list"),
    (["scale", "--reports-dir", "afile"], "afile exists and is not a folder"),
    (["scale", "--world-sizes", "1,2", "--repeats", "0"], "--repeats must be >= 1"),
    (["scale", "--nodes", "1,2", "--world-sizes", "1,2"], "--nodes and --world-sizes are two ways"),
    (["scale", "--procs", "1"], "--procs, --gpus and --rdzv-endpoint go with --nodes"),
    (["scale", "--strong", "--world-sizes", "1,2", "--", "afile"], "--strong with a script needs --batch-argument"),
    (["scale", "--batch-argument", "--bs", "--", "afile"], "--batch-argument --bs: the script's arguments (none)"),
    (["scale", "--batch-argument", "--bs"], "--batch-argument names a script's argument"),
    (["scale", "--batch-argument=--bs", "--", "afile", "--bs=x"], "--batch-argument --bs: the script is given 'x'"),
    (
        ["scale", "--strong", "--batch-argument", "--bs", "--world-sizes", "1,3", "--", "afile", "--bs", "4"],
        "the global batch 4 does not divide evenly over 3 ranks",
    ),
    (["scale", "--nodes", "1,2", "--run-id", "s"], "--nodes: pass --rdzv-endpoint HOST:PORT"),
    (["scale", "--nodes", "1,2", "--rdzv-endpoint", "h:29400"], "--nodes: pass the same --run-id NAME"),
    (["scale", "--nodes", "0,2", "--rdzv-endpoint", "h:29400", "--run-id", "s"], "--nodes must be >= 1"),
    (["scale", "--nodes", "2", "--rdzv-endpoint", "h:29400", "--run-id", "s"], "--nodes needs at least two sizes"),
]

TRACE = (
    '{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 100, '
    '"pid": 1, "tid": 1}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 50, "pid": 1, "tid": 1}]}'
)


def make_sandbox(folder: Path) -> None:
    """The files the cases refer to."""
    (folder / "afile").write_text("a file, not a folder\n")
    (folder / "broken.py").write_text("def build(:\n")
    (folder / "nobuild.py").write_text("x = 1\n")
    (folder / "notjson.json").write_text("{not json")
    (folder / "notreport.json").write_text('{"hello": "world"}')
    (folder / "trace.json").write_text(TRACE)
    (folder / "empty").mkdir()


# the interfaces a case sees (the message of GLOO_SOCKET_IFNAME's case lists them): those of a typical host
INTERFACES = [(1, "lo"), (2, "eth0")]


def run_case(argv: list[str]) -> tuple[int, str]:
    """The exit code and stderr of `commprof ARGV`, run in this process; leading NAME=VALUE words are environment
    variables set for it, as a shell reads them."""
    from commprof.cli.app import main

    variables = dict(word.split("=", 1) for word in itertools.takewhile(lambda w: "=" in w, argv))
    argv = argv[len(variables) :]
    err = io.StringIO()
    with (
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(io.StringIO()),
        mock.patch.dict(os.environ, variables),
        mock.patch("socket.if_nameindex", lambda: INTERFACES),
    ):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
    return code, err.getvalue().strip()


def markdown_table() -> str:
    rows = ["| command line | exit | message |", "|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        make_sandbox(Path(tmp))
        here = os.getcwd()
        os.chdir(tmp)
        try:
            for argv, _ in CASES:
                code, err = run_case(argv)
                line = (
                    " ".join(w for w in argv if "=" in w.split("-", 1)[0])
                    + " commprof "
                    + " ".join(w for w in argv if "=" not in w.split("-", 1)[0])
                )
                rows.append(f"| `{line.strip()}` | {code} | {err.replace('|', '/')} |")
        finally:
            os.chdir(here)
    return "\n".join(rows)


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "200")
    sys.path.insert(0, str(Path(__file__).parent))
    print(markdown_table())
