"""The commands matrix of issue 53 (item 2): every command that takes a job, {run, sweep, tune, advise, compare, scale,
diff, report, view}, on every kind of job: commprof's own DDP model (no script) and its FSDP (--strategy fsdp); a plain
DDP script (argparse, its own DDP); a script that calls fully_shard itself; DeepSpeed ZeRO stage 1, 2 and 3 scripts;
torch.compile over DDP (aot_eager: inductor's C++ build takes minutes on 2 cores); a Hugging Face Trainer script and a
Lightning script; a plain Horovod script (issue 54). Each cell is a short real run on 2 CPU ranks over Gloo, in a fresh
folder of its own (its cwd), run as a user runs it: not quiet, so the progress lines and the script's own output come
too.

    python benchmarks/check/commands_matrix.py [--commands run,sweep ...] [--kinds builtin-ddp,zero2 ...]
        [--workdir DIR] [--jobs 1] [--timeout-scale 1.0]

Each cell ends in one of:

- result: exit 0, no "Traceback" in stdout or stderr, and for a command that writes a report (run, sweep, tune,
  advise, compare, scale) reports/<its run id>/report.json exists; view: it printed its URL, the URL's
  /data/plugins_listing answered, and after Ctrl-C (SIGINT to its process group) it exited 0 within 45 s, none of
  its processes left running and nothing serving there any more.
- refused: exit 2, no "Traceback" in stdout or stderr, and exactly one stderr line that starts with "error:" (how
  commprof says it refuses), which is stderr's last non-empty line. Other stderr lines may come before it: commprof's
  progress lines go to stderr ("commprof: rank 0 training: ...") and a refusal may follow a launch that told what the
  script trains with.
- script error: exit 1, the user's script raised: its own traceback as Python shows it, then commprof's one error line
  naming the rank that "raised the error above" (and, where commprof gave the script what it failed on, what to do:
  a Lightning Trainer that fixes its devices run at another world size).
- FAIL: anything else: another exit code (1: a failed job, or commprof's own bug), a traceback of commprof's, no error
  line or several, a line after the error, a missing report.json, the per-cell timeout.
- skipped: the kind needs a package that is not installed (deepspeed, transformers, lightning).
- no run: advise, diff, report and view read a finished run of the kind (diff, report and view the run cell's, in a
  copy of its folder; advise one of its own with small gradient buckets, so that it has a setting to check: see
  run_to_advise); where that run was no result, they are not run (the run cell says why). advise's own run, or a
  run made for a reader where the run cell was not chosen, that FAILs is the reader's FAIL.

Prints progress on stderr, then a Markdown table on stdout (rows: kinds; columns: commands), each FAIL's command line
with the last 30 lines of its output, and the total wall time; exits 1 when any cell FAILs. Every cell's folder
(out.txt, err.txt, traces/, reports/) stays under --workdir."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import TESTS_DATA, children, commprof_argv, table_header, table_row  # noqa: E402
from commprof.commands.view import stop_group  # noqa: E402

SCRIPTS = TESTS_DATA / "scripts"
COMMANDS = ("run", "sweep", "tune", "advise", "compare", "scale", "diff", "report", "view")
# the commands that read a finished run of the kind (the run cell's, or one made for them)
READS_A_RUN = ("advise", "diff", "report", "view")
# the commands that write reports/<run id>/report.json, with the run id each cell gives
WRITES = {"run": "m", "sweep": "sw", "tune": "tu", "advise": "ad", "compare": "cmp", "scale": "sc"}
RUN_ID = WRITES["run"]


@dataclass(frozen=True)
class Kind:
    name: str
    what: str
    script: tuple[str, ...] = ()  # the script and its arguments (after --); empty: commprof's own model
    options: tuple[str, ...] = ()  # what every launching command of this kind is given (--strategy fsdp)
    needs: str | None = None  # the package it needs; the row is skipped without it
    sweep: tuple[str, ...] = ("--bucket-cap-mb", "1,25")  # the settings its sweep compares
    # the run advise reads is given small gradient buckets, so that it has a setting finding to check: "ddp"
    # (--bucket-cap-mb 0.01), "compiled" (1: torch.compile's smallest), "zero" (the script's --reduce-bucket-size
    # 2000), "horovod" (--fusion-threshold-mb 0) or "" (FSDP: none to make smaller)
    buckets: str = "ddp"
    models: int = 1  # the models the script builds (issue 63: one or two)

    @property
    def skipped(self) -> str | None:
        if self.needs and importlib.util.find_spec(self.needs) is None:
            return f"{self.needs} is not installed"
        return None


def _deepspeed(stage: int) -> Kind:
    return Kind(
        f"zero{stage}",
        f"DeepSpeed ZeRO stage {stage} script",
        (str(SCRIPTS / "train_deepspeed.py"), "--stage", str(stage)),
        needs="deepspeed",
        buckets="zero",
        sweep=("--strategy", "deepspeed", "--reduce-bucket-size", "5e5,5e7"),
    )


KINDS = (
    Kind("builtin-ddp", "commprof's own model, DDP (no script)"),
    Kind(
        "builtin-fsdp",
        "commprof's own model, FSDP (--strategy fsdp)",
        options=("--strategy", "fsdp"),
        buckets="",
        sweep=("--reshard-after-forward", "true,false", "--forward-prefetch", "0"),
    ),
    Kind(
        "script-ddp",
        "a plain DDP script (argparse, its own DDP)",
        (str(SCRIPTS / "train_default_ddp.py"), "--epochs", "1", "--steps-per-epoch", "100"),
    ),
    Kind(
        "script-fsdp",
        "a script that calls fully_shard itself",
        (str(SCRIPTS / "train_fsdp.py"), "100"),
        buckets="",
        sweep=("--strategy", "fsdp", "--reshard-after-forward", "true,false"),
    ),
    Kind(
        "gan-ddp",
        "a GAN script: two DDP models, each with its own bucket_cap_mb (issue 63)",
        (str(SCRIPTS / "train_gan.py"), "--steps", "100"),
        models=2,
    ),
    Kind(
        "two-fsdp",
        "a script that shards two models with fully_shard, a teacher and a student (issue 63)",
        (str(SCRIPTS / "train_fsdp_two.py"), "100"),
        buckets="",
        sweep=("--strategy", "fsdp", "--reshard-after-forward", "true,false"),
        models=2,
    ),
    Kind(
        "fsdp-ddp",
        "a job of two kinds: an FSDP2 encoder and an inline DDP head, `head = DDP(nn.Sequential(...))` (issue 69)",
        (str(SCRIPTS / "train_fsdp_ddp.py"), "100"),
        models=2,
    ),
    _deepspeed(1),
    _deepspeed(2),
    _deepspeed(3),
    Kind(
        "compiled",
        "torch.compile over DDP",
        (str(SCRIPTS / "train_compiled.py"), "aot_eager", "100"),
        buckets="compiled",
    ),
    Kind("hf-trainer", "a Hugging Face Trainer script", (str(SCRIPTS / "train_hf_trainer.py"),), needs="transformers"),
    Kind("lightning", "a Lightning script", (str(SCRIPTS / "train_lightning.py"),), needs="lightning"),
    Kind(
        "horovod",
        "a plain Horovod script (issue 54)",
        (str(SCRIPTS / "train_horovod.py"), "--steps", "100"),
        needs="horovod",
        sweep=("--strategy", "horovod", "--fusion-threshold-mb", "1,128"),
        buckets="horovod",
    ),
)
KIND_NAMES = tuple(k.name for k in KINDS)

# how long each cell is run, and the rounds of the commands that launch many times
BUILTIN_LENGTH = ("--steps", "8", "--schedule", "2,1,4", "--batch-size", "8")
SCRIPT_LENGTH = ("--max-steps", "8", "--schedule", "2,1,4")
# two launches (or repeats) at least and at most: the matrix checks how each command ends, not its intervals
BUILTIN_ROUNDS = ("--repeats", "2", "--max-repeats", "2", "--steps-per-repeat", "2", "--warmup-steps", "2")
BUILTIN_ROUNDS += ("--profile-steps", "2")
SCRIPT_ROUNDS = ("--repeats", "2", "--max-repeats", "2", "--max-steps", "6", "--warmup-steps", "2")
SCRIPT_ROUNDS += ("--profile-steps", "2")
TIMEOUT_S = {"sweep": 900, "tune": 1200, "advise": 900}  # the others: 300 (view: 120, its start and one request)
VIEW_START_S = 60  # view: until it prints its URL
VIEW_STOP_S = 45  # view: from Ctrl-C to its exit (it gives TensorBoard 30 s to stop)


@dataclass(frozen=True)
class Cell:
    command: str
    kind: Kind
    args: tuple[str, ...]  # commprof's arguments
    timeout_s: float
    report: str | None = None  # the run id whose reports/<id>/report.json a result writes

    @property
    def reads_a_run(self) -> bool:
        return self.command in READS_A_RUN

    @property
    def name(self) -> str:
        return f"{self.kind.name} {self.command}"

    def command_line(self) -> str:
        return "commprof " + shlex.join(self.args)


def _launching(command: str, kind: Kind) -> tuple[str, ...]:
    """The arguments of a command that launches the job: run, sweep, tune, compare, scale."""
    run_id = ("--run-id", WRITES[command])
    if kind.script:
        length, rounds, job, options = SCRIPT_LENGTH, SCRIPT_ROUNDS, ("--", *kind.script), ()
    else:
        length, rounds, job, options = BUILTIN_LENGTH, (*BUILTIN_ROUNDS, "--batch-size", "8"), (), kind.options
    if command == "run":
        return (command, *run_id, *length, *options, *job)
    if command == "sweep":
        return (command, *run_id, *kind.sweep, *options, *rounds, *job)
    if command == "tune":  # a DeepSpeed script: without --strategy, tune finds ZeRO by itself (issue 53)
        return (command, *run_id, *options, *rounds, *job)
    if command == "compare":  # commprof's FSDP: against its DDP (compare --strategy fsdp is refused, and says so)
        chosen = ("--strategies", "ddp,fsdp") if kind.options == ("--strategy", "fsdp") else options
        return (command, *run_id, *chosen, "--repeats", "1", *length, *job)
    if command == "scale":
        return (command, *run_id, "--world-sizes", "1,2", "--repeats", "1", *length, *options, *job)
    raise ValueError(command)


def cell(command: str, kind: Kind) -> Cell:
    """The cell of COMMAND on KIND: the arguments a user of that kind of job would give it, made short."""
    if command == "advise":
        args: tuple[str, ...] = (
            *("advise", RUN_ID, "--run-id", WRITES["advise"]),
            *(SCRIPT_ROUNDS if kind.script else BUILTIN_ROUNDS),
        )
    elif command == "diff":
        args = ("diff", RUN_ID, RUN_ID)  # the run against itself: every delta zero, none beyond the noise
    elif command == "report":
        args = ("report", RUN_ID)
    elif command == "view":
        args = ("view", RUN_ID, "--json")
    else:
        args = _launching(command, kind)
    timeout = 120 if command == "view" else TIMEOUT_S.get(command, 300)
    return Cell(command, kind, args, timeout, WRITES.get(command))


def run_to_advise(kind: Kind) -> Cell:
    """The run that advise reads: the kind's run, longer (16 profiled steps of commprof's model, 8 of a script) and
    with small gradient buckets, so that its findings advise a setting (a run with none is refused: "nothing to
    advise"). Measured, not planted: on a noisy machine the finding may fall within the noise all the same."""
    if kind.script:
        small = {
            "ddp": ("--bucket-cap-mb", "0.01"),
            "compiled": ("--bucket-cap-mb", "1"),  # Dynamo's DDPOptimizer refuses a cap under DDP's 1 MiB first bucket
            "horovod": ("--strategy", "horovod", "--fusion-threshold-mb", "0"),
        }.get(kind.buckets, ())
        script = (*kind.script, *(("--reduce-bucket-size", "2000") if kind.buckets == "zero" else ()))
        args = ("run", "--run-id", RUN_ID, "--max-steps", "16", "--schedule", "2,1,8", *small, "--", *script)
    else:
        small = ("--bucket-cap-mb", "0.01") if kind.buckets == "ddp" else ()
        args = ("run", "--run-id", RUN_ID, "--steps", "24", "--schedule", "2,1,16", "--batch-size", "8", *small)
        args += kind.options
    return Cell("run", kind, args, TIMEOUT_S.get("run", 300), RUN_ID)


def cells(commands: Sequence[str] = COMMANDS, kinds: Sequence[str] = KIND_NAMES) -> list[Cell]:
    """The matrix, kind by kind (each kind's run first: the commands that read a run reuse its folder)."""
    chosen = [k for k in KINDS if k.name in kinds]
    return [cell(c, k) for k in chosen for c in COMMANDS if c in commands]


@dataclass
class Outcome:
    status: str  # result, refused, script error, FAIL, skipped, no run
    detail: str = ""  # the refusal's line, or what failed
    seconds: float = 0.0
    folder: Path | None = None
    output: str = field(default="", repr=False)  # stdout and stderr, for a FAIL's last lines

    def shown(self) -> str:
        took = f" ({self.seconds:.0f} s)" if self.seconds else ""
        if self.status == "result":
            return f"result{took}"
        if self.status == "refused":
            return f"refused{took}: {self.detail[len('error: ') :][:60]}"
        return f"{self.status}{took}: {self.detail[:80]}"


def classify(code: int, out: str, err: str, report: Path | None) -> tuple[str, str]:
    """(status, detail) of a finished command, by the rules in this file's docstring."""
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    if code == 1 and len(errors) == 1 and lines[-1] == errors[0] and SCRIPT_RAISED in errors[0]:
        return "script error", errors[0]  # the script's own traceback above it, as Python shows it
    if "Traceback" in out or "Traceback" in err:
        return "FAIL", f"exit {code} with a traceback"
    if code == 0:
        if report is not None and not report.is_file():
            return "FAIL", f"exit 0 without {report.parent.name}/report.json"
        return "result", ""
    if code == 2:
        if len(errors) == 1 and lines[-1] == errors[0]:
            return "refused", errors[0]
        if not errors:
            return "FAIL", f"exit 2 with no error line (last: {lines[-1] if lines else 'nothing'})"
        return "FAIL", f"exit 2 with {len(errors)} error lines, the last line {lines[-1]!r}"
    last = errors[-1] if errors else (lines[-1] if lines else "nothing on stderr")
    return "FAIL", f"exit {code}: {last}"


SCRIPT_RAISED = "raised the error above"  # commprof's line after a script's own traceback


def _environment() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "120", "PYTHONUNBUFFERED": "1"}


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _sigint_as_at_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    """Running (a zombie, ended and not yet reaped, is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _serves(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except (urllib.error.URLError, OSError):
        return False


def _view(cell: Cell, process: subprocess.Popen, out_path: Path, err_path: Path) -> tuple[str, str] | None:
    """View: wait for its URL, fetch /data/plugins_listing, stop it as a user does (Ctrl-C), check that nothing serves
    there any more. None: it ended before printing a URL (classified as any command)."""
    end, url = time.monotonic() + VIEW_START_S, None
    while time.monotonic() < end and process.poll() is None:
        for line in _read(out_path).splitlines():
            try:
                url = json.loads(line)["url"]
            except (ValueError, KeyError, TypeError):
                continue
        if url:
            break
        time.sleep(0.5)
    if url is None:
        if process.poll() is None:
            stop_group(process, grace_s=20)
            return "FAIL", f"no URL within {VIEW_START_S} s"
        return None
    listing = f"{url}/data/plugins_listing"
    try:
        with urllib.request.urlopen(listing, timeout=30) as response:
            plugins = json.loads(response.read())
        served = ("", f"plugins: {', '.join(sorted(plugins))[:60]}")
    except (urllib.error.URLError, OSError, ValueError) as error:
        served = ("FAIL", f"{listing} did not answer: {error}")
    left = _descendants(process.pid)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
    try:
        code: int | None = process.wait(timeout=VIEW_STOP_S)
    except subprocess.TimeoutExpired:
        code = None
    alive = [pid for pid in left if _alive(pid)]
    still = _serves(listing)
    stop_group(process, grace_s=20)
    for pid in alive:  # what the Ctrl-C left behind (ours: started by this cell)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if served[0] == "FAIL":
        return served
    if code is None:
        return "FAIL", f"still running {VIEW_STOP_S} s after Ctrl-C"
    if code != 0:
        errors = [line for line in _read(err_path).splitlines() if line.startswith("error:")]
        return "FAIL", f"exit {code} after Ctrl-C" + (f": {errors[-1]}" if errors else "")
    if alive:
        return "FAIL", f"{len(alive)} of its processes left running after Ctrl-C (TensorBoard's)"
    if still:
        return "FAIL", f"TensorBoard still served {url} after Ctrl-C"
    return "result", served[1]


def run_cell(cell: Cell, folder: Path, run_folder: Path | None = None) -> Outcome:
    """Run one cell in FOLDER (made fresh; a command that reads a run gets a copy of RUN_FOLDER's traces and
    reports first)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if run_folder is not None:
        for part in ("traces", "reports"):
            if (run_folder / part).is_dir():
                shutil.copytree(run_folder / part, folder / part, symlinks=True)
    out_path, err_path = folder / "out.txt", folder / "err.txt"
    started = time.monotonic()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(
            commprof_argv(*cell.args),
            cwd=folder,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=_environment(),
            start_new_session=True,  # its own process group: a timeout stops its ranks too
            # Ctrl-C reaches it as a terminal's would: a shell started in the background (CI, nohup) ignores SIGINT,
            # and so would every process it starts
            preexec_fn=_sigint_as_at_a_terminal,
        )
        viewed = _view(cell, process, out_path, err_path) if cell.command == "view" else None
        timed_out = False
        if viewed is None:
            try:
                process.wait(timeout=cell.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                stop_group(process, grace_s=20)
    took = time.monotonic() - started
    stdout, stderr = _read(out_path), _read(err_path)
    output = f"{stderr}\n--- stdout ---\n{stdout}" if stdout.strip() else stderr
    if viewed is not None:
        status, detail = viewed
        if status == "result" and ("Traceback" in stdout or "Traceback" in stderr):
            status, detail = "FAIL", "a traceback after Ctrl-C"
    elif timed_out:
        status, detail = "FAIL", f"timed out after {cell.timeout_s:.0f} s"
    else:
        report = folder / "reports" / cell.report / "report.json" if cell.report else None
        status, detail = classify(process.returncode, stdout, stderr, report)
    return Outcome(status, detail, took, folder, output)


class Matrix:
    """Runs cells, keeping each kind's run folder for the commands that read a run."""

    def __init__(self, work: Path, timeout_scale: float = 1.0):
        self.work, self.timeout_scale = work, timeout_scale
        self.runs: dict[tuple[str, str], Outcome] = {}  # (kind, "run" or "advise") -> the run they read
        self.made: dict[tuple[str, str], Cell] = {}  # those made for the readers (not the run cell's)

    def the_run(self, kind: Kind, reader: str) -> tuple[Outcome, Cell | None]:
        """The run of KIND that READER reads (advise's own, see run_to_advise; the others the run cell's), with the
        cell that made it when the run cell did not."""
        key = (kind.name, "advise" if reader == "advise" else "run")
        if key not in self.runs:
            self.made[key] = made = run_to_advise(kind) if reader == "advise" else cell("run", kind)
            self.runs[key] = run_cell(made, self.work / kind.name / f"run-for-{key[1]}")
        return self.runs[key], self.made.get(key)

    def outcome(self, target: Cell) -> Outcome:
        if target.kind.skipped:
            return Outcome("skipped", target.kind.skipped)
        timed = dataclasses.replace(target, timeout_s=target.timeout_s * self.timeout_scale)
        folder = self.work / target.kind.name / target.command
        if target.command == "run":
            self.runs[(target.kind.name, "run")] = outcome = run_cell(timed, folder)
            return outcome
        if not target.reads_a_run:
            return run_cell(timed, folder)
        run, made = self.the_run(target.kind, target.command)
        if run.status == "FAIL" and made is not None:  # no run cell says so: this cell's failure
            detail = f"the run it reads failed ({made.command_line()}): {run.detail}"
            return Outcome("FAIL", detail, run.seconds, run.folder, run.output)
        if run.status != "result":
            return Outcome("no run", f"the kind's run: {run.status} {run.detail}".strip())
        return run_cell(timed, folder, run.folder)


def _kinds_in_order(chosen: list[Cell]) -> list[list[Cell]]:
    rows: dict[str, list[Cell]] = {}
    for c in chosen:
        rows.setdefault(c.kind.name, []).append(c)
    return list(rows.values())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated (default: all)")
    parser.add_argument("--kinds", default=",".join(KIND_NAMES), help="comma-separated (default: all)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the cells run (default: a temporary folder)")
    parser.add_argument("--jobs", type=int, default=1, help="kinds run at once (default 1: one cell at a time)")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiplies every cell's timeout")
    options = parser.parse_args(argv)
    commands, kinds = options.commands.split(","), options.kinds.split(",")
    unknown = sorted(set(commands) - set(COMMANDS)) + sorted(set(kinds) - set(KIND_NAMES))
    if unknown:
        parser.error(f"unknown: {', '.join(unknown)} (commands: {', '.join(COMMANDS)}; kinds: {', '.join(KIND_NAMES)})")
    work = options.workdir or Path(tempfile.mkdtemp(prefix="commands-matrix-"))
    work.mkdir(parents=True, exist_ok=True)
    matrix = Matrix(work, options.timeout_scale)
    chosen = cells(commands, kinds)
    outcomes: dict[tuple[str, str], Outcome] = {}
    started = time.monotonic()
    print(f"commands matrix: {len(chosen)} cells in {work}", file=sys.stderr, flush=True)

    def row(kind_cells: list[Cell]) -> None:
        for c in kind_cells:  # a kind's cells in order, one at a time (its run first)
            outcome = matrix.outcome(c)
            outcomes[(c.kind.name, c.command)] = outcome
            print(f"[{len(outcomes)}/{len(chosen)}] {c.name}: {outcome.shown()}", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        list(pool.map(row, _kinds_in_order(chosen)))
    total = time.monotonic() - started

    shown_commands = [c for c in COMMANDS if c in commands]
    table_header("kind", "models", *shown_commands)
    for kind in (k for k in KINDS if k.name in kinds):
        table_row(
            kind.name,
            str(kind.models),
            *(outcomes[(kind.name, c)].shown().replace("|", "\\|") for c in shown_commands),
        )
    failed = [
        (c, outcomes[(c.kind.name, c.command)]) for c in chosen if outcomes[(c.kind.name, c.command)].status == "FAIL"
    ]
    counts: dict[str, int] = {}
    for o in outcomes.values():
        counts[o.status] = counts.get(o.status, 0) + 1
    print()
    print("kinds: " + "; ".join(f"{k.name}: {k.what}" for k in KINDS if k.name in kinds))
    print("cells: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for c, o in failed:
        tail = "\n".join(o.output.rstrip().splitlines()[-30:])
        print(f"\n### FAIL: {c.name}\n\n    cd {o.folder} && {c.command_line()}\n\n```\n{tail}\n```")
    print(f"\ntotal wall time: {total:.0f} s ({total / 60:.1f} min); cells in {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
