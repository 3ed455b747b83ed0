"""The example outputs of README.md and of the docs pages (docs/commands/, docs/frameworks/), regenerated from real
runs so that the documentation and the tool cannot drift apart.

    python docs/readme_examples.py            # rerun every example, rewrite its block in its page (minutes)
    python docs/readme_examples.py --check    # exit 1 when the pages' examples are not the ones listed here
    python docs/readme_examples.py --only "run-id hvd"   # rerun the examples whose first command contains this

An example is a fenced block of a page whose first line is `$ COMMAND`; further `$` lines in the block are more
commands, run after it in the same folder. Each block runs in a fresh folder that holds the files (or folders) its
example names, at 120 columns, its output piped as a log sees it (stderr with stdout). Where a page shows part of
a report, `sections` names the report's sections kept; each part left out is one "(...)" line. `PAGES` lists every
page's examples in the page's order; a page with an example block that `PAGES` does not list fails the check."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
LEFT_OUT = "(...)"
# the section titles a report's terminal output prints (render/); a title line begins a section
TITLES = (
    "Findings",
    "Where the step goes",
    "By phase",
    "By dimension",
    "Models",
    "Whole run (every step, every rank)",
    "Collectives",
    "Network",
    "Across ranks",
    "Tune",
    "Sweep",
    "Advise",
    "The findings, checked",
    "Buckets DDP built",
    "DDP's own measurements next to the trace's",
    "FSDP all-gathers by module",
    "Notes",
)
CLOSING = ("traces: ", "script output: ", "report: ")
PROGRESS_KEPT = 3  # of a long run of progress lines (a tune's launches), the first and the last this many


@dataclass(frozen=True)
class Command:
    line: str  # as the page shows it after "$ "
    sections: tuple[str, ...] | None = None  # the report's sections kept; None: all of its output
    from_report: bool = False  # with sections: what comes before the report's first line left out too
    most: int | None = None  # with sections: of each section kept, at most this many lines after its title


@dataclass(frozen=True)
class Example:
    commands: tuple[Command, ...]
    files: dict[str, str] = field(default_factory=dict)  # name in the example's folder -> file (or folder) here
    before: tuple[str, ...] = ()  # commands run first, their output not shown


SCRIPT = "tests/data/scripts/"
DEEP_MLP = {"tests/data/deep_mlp.py": "tests/data/deep_mlp.py"}
EPOCHS = {"train.py": SCRIPT + "train_epochs.py"}
DEEPSPEED = {"train.py": SCRIPT + "train_deepspeed.py"}
HOROVOD = {"train.py": SCRIPT + "train_horovod.py"}
RECORDED = "tests/data/"  # runs recorded once (benchmarks/generate/record_runs.py): analysed again, nothing launched
PAGES: dict[str, tuple[Example, ...]] = {  # each page's examples, in the page's order
    "README.md": (
        Example(
            (
                Command(
                    "commprof run --run-id mine --max-steps 30 -- train.py --lr 0.05 --epochs 5 2>&1 | cat",
                    ("Findings",),
                    from_report=True,
                    most=6,
                ),
            ),
            EPOCHS,
        ),
    ),
    "docs/commands/run.md": (Example((Command("commprof run --run-id example 2>&1 | cat"),)),),
    "docs/commands/tune.md": (
        Example((Command("commprof tune --model tests/data/deep_mlp.py:build --run-id dm", ("Tune",)),), DEEP_MLP),
        Example(
            (
                Command(
                    "commprof tune --run-id own --max-steps 8 -- train.py --epochs 1", ("Tune", "Buckets DDP built")
                ),
            ),
            {"train.py": SCRIPT + "train_default_ddp.py"},
        ),
    ),
    "docs/commands/advise.md": (
        Example(
            (
                Command(
                    "commprof run --model tests/data/deep_mlp.py:build --bucket-cap-mb 0.001 --run-id tiny",
                    ("Findings",),
                ),
                Command("commprof advise tiny", ("Advise", "The findings, checked")),
            ),
            DEEP_MLP,
        ),
    ),
    "docs/commands/analyze.md": (
        Example((Command("commprof analyze traces/exp1", ()),), before=("commprof run --run-id exp1 --quiet",)),
    ),
    "docs/frameworks/deepspeed.md": (
        Example(
            (
                Command(
                    "commprof run --run-id zero --max-steps 20 --script-output none -- train.py --stage 2",
                    ("By phase", "Collectives", "Notes"),
                ),
            ),
            DEEPSPEED,
        ),
        Example(
            (
                Command(
                    "commprof tune --strategy deepspeed --run-id zt --max-steps 8 --repeats 3 -- train.py --stage 2 "
                    "--reduce-bucket-size 5e3",
                    ("Tune",),
                ),
            ),
            DEEPSPEED,
        ),
    ),
    "docs/frameworks/horovod.md": (
        Example(
            (
                Command(
                    "commprof run --run-id hvd --max-steps 30 --script-output none -- train.py",
                    ("Collectives", "Notes"),
                ),
            ),
            HOROVOD,
        ),
        Example((Command("commprof tune --run-id ht --max-steps 12 --repeats 3 -- train.py", ("Tune",)),), HOROVOD),
        Example(
            (
                Command(
                    "commprof run --run-id hf0 --strategy horovod --fusion-threshold-mb 0 --max-steps 40 "
                    "--script-output none -- train.py",
                    ("Findings",),
                ),
                Command("commprof advise hf0 --repeats 8 --max-steps 20", ("The findings, checked",)),
            ),
            HOROVOD,
        ),
    ),
    "docs/frameworks/device-meshes.md": tuple(
        Example((Command(f"commprof analyze {RECORDED}{name}", sections),), {RECORDED + name: RECORDED + name})
        for name, sections in (
            ("fsdp-tp", ("Whole run (every step, every rank)", "By dimension", "Collectives")),
            ("pipeline-dp", ("By dimension",)),
            ("subgroups-late", ("Findings", "By dimension", "Across ranks")),
        )
    ),
}
EXAMPLES = tuple(example for examples in PAGES.values() for example in examples)


def shown(
    output: str, sections: tuple[str, ...] | None, from_report: bool = False, most: int | None = None
) -> list[str]:
    """The lines a page shows of a command's output: all, or what comes before its report's first section (unless
    `from_report`), the sections named (at most `most` lines of each after its title) and the closing lines, with
    one "(...)" for each run of lines left out."""
    lines = output.rstrip("\n").split("\n")
    if sections is None:
        return lines
    lines = _progress_shortened(lines)
    kept: list[str] = []
    keeping, in_report = not from_report, False
    section_lines: int | None = None  # lines so far of the section being read, after its title
    for line in lines:
        if line.startswith("commprof report: "):
            in_report, keeping = True, True
        if in_report and (line in TITLES or line.startswith("One backward pass of ")):
            keeping, section_lines = line in sections, 0
        elif line.startswith(CLOSING):
            keeping, section_lines = True, None
        elif section_lines is not None:
            section_lines += 1
        if keeping and (most is None or section_lines is None or section_lines <= most):
            kept.append(line)
        elif not kept or kept[-1] != LEFT_OUT:
            kept.append(LEFT_OUT)
    return kept


def _progress_shortened(lines: list[str]) -> list[str]:
    """Each run of more than 2 x PROGRESS_KEPT progress lines ("commprof: ...") as its first and last few."""
    kept: list[str] = []
    run: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("commprof: "):
            run.append(line)
            continue
        long = len(run) > 2 * PROGRESS_KEPT
        kept += [*run[:PROGRESS_KEPT], LEFT_OUT, *run[-PROGRESS_KEPT:]] if long else run
        run = []
        kept.append(line)
    return kept[:-1]


def run_example(example: Example) -> list[str]:
    """Every command of the example in a fresh folder: "$ command" and the lines shown of its output."""
    folder = Path(tempfile.mkdtemp(prefix="commprof-example-"))
    environment = {
        **os.environ,
        "COLUMNS": "120",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "MPLCONFIGDIR": str(folder / ".matplotlib"),
    }
    try:
        for name, source in example.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, folder / name)
            else:
                shutil.copy(REPO / source, folder / name)
        for line in example.before:
            _run(line, folder, environment)
        block = []
        for command in example.commands:
            output = _run(command.line if "2>&1" in command.line else f"{command.line} 2>&1", folder, environment)
            block += [f"$ {command.line}", *shown(output, command.sections, command.from_report, command.most)]
        return block
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(line: str, folder: Path, environment: dict[str, str]) -> str:
    """What `line` printed, run by bash in `folder`; a failure anywhere in its pipe stops the script, with it."""
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line], cwd=folder, env=environment, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"`{line}` failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each example block's content: fenced blocks whose first line is `$ `."""
    return [(m.start(1), m.end(1)) for m in re.finditer(r"^```\n(\$ .*?\n)```$", text, flags=re.M | re.S)]


def first_command(text: str, span: tuple[int, int]) -> str:
    return text[span[0] : span[1]].split("\n", 1)[0].removeprefix("$ ")


def pages_with_examples() -> list[str]:
    """Every page of README.md and docs/ that holds an example block, as PAGES names it."""
    pages = [README, *sorted(DOCS.rglob("*.md"))]
    return [page.relative_to(REPO).as_posix() for page in pages if blocks(page.read_text())]


def unlisted() -> list[str]:
    """What differs between the pages' example blocks and PAGES: one line each, none when they agree."""
    problems = [f"{page}: example blocks, but not in PAGES" for page in pages_with_examples() if page not in PAGES]
    for page, examples in PAGES.items():
        text = (REPO / page).read_text() if (REPO / page).exists() else ""
        found = [first_command(text, span) for span in blocks(text)]
        listed = [example.commands[0].line for example in examples]
        if found != listed:
            problems.append(f"{page}: its examples {found} are not this script's {listed}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check the pages' examples against this list")
    parser.add_argument("--only", metavar="TEXT", help="rerun only the examples whose first command contains TEXT")
    args = parser.parse_args()
    problems = unlisted()
    if problems:
        raise SystemExit("\n".join(problems))
    if args.check:
        return
    for page, examples in PAGES.items():
        path = REPO / page
        text = path.read_text()
        spans = blocks(text)
        for example, span in reversed(list(zip(examples, spans, strict=True))):
            if args.only and args.only not in example.commands[0].line:
                continue
            print(f"running ({page}): {example.commands[0].line}", file=sys.stderr, flush=True)
            text = text[: span[0]] + "\n".join(run_example(example)) + "\n" + text[span[1] :]
        path.write_text(text)


if __name__ == "__main__":
    main()
