"""Behaviour preserved: the report.json of a fresh `commprof run --seed 0` and of every trace folder in
tests/data/traces is the same, field for field and number for number, with this tree and with REF.

    python benchmarks/check/check_unchanged.py REF [--workdir DIR] [--new-field NAME ...]

It runs `commprof run --seed 0` once with this tree, then `commprof analyze` on the run's traces and on
each tests/data/traces folder with both versions (REF unpacked with `git archive`), and compares the
reports without their volatile fields (creation time, paths). The run's own report.json is compared
with REF's analysis of the same traces too (`kind` and `name` aside). Exits 1 on any difference but a
field named with --new-field being new."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import REPO, commprof  # noqa: E402
from tests.golden_reports import FOLDERS, TRACES, differences, normalized  # noqa: E402

RUN = ["--seed", "0", "--steps", "8", "--schedule", "2,1,4", "--batch-size", "8", "--quiet"]


def analysis(code: Path, work: Path, source: Path, name: str) -> dict:
    commprof(
        "analyze",
        str(source),
        "--name",
        name,
        "--reports-dir",
        str(work / "reports"),
        "--quiet",
        "--workers",
        "1",
        cwd=work,
        code=code,
    )
    return normalized(json.loads((work / "reports" / name / "report.json").read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--new-field",
        action="append",
        default=[],
        metavar="NAME",
        help="A top-level field this tree adds on purpose (e.g. job_step): its being new is no difference.",
    )
    args = parser.parse_args()
    expected = {f".{name}: new field" for name in args.new_field}
    work = args.workdir or Path(tempfile.mkdtemp(prefix="commprof-unchanged-"))
    old = work / "ref"
    old.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", args.ref, "commprof"], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    commprof("run", "--run-id", "fresh", *RUN, cwd=work, code=REPO)
    sources = {"commprof run --seed 0": work / "traces" / "fresh"} | {folder: TRACES / folder for folder in FOLDERS}
    failed = 0
    for label, source in sources.items():
        key = label.replace(" ", "-").replace("/", "__")
        before, after = analysis(old, work, source, f"old-{key}"), analysis(REPO, work, source, f"new-{key}")
        found = differences({**before, "name": ""}, {**after, "name": ""})
        if label.startswith("commprof run"):
            written = normalized(json.loads((work / "reports" / "fresh" / "report.json").read_text()))
            found += differences({**before, "name": "", "kind": ""}, {**written, "name": "", "kind": ""})
        found = [line for line in found if line not in expected]
        failed += bool(found)
        print(f"{'same' if not found else 'DIFFERENT'}: {label} ({len(json.dumps(after))} bytes of report)")
        for line in found[:20]:
            print(f"    {line}")
    print(f"{len(sources) - failed} of {len(sources)} reports unchanged against {args.ref} (work folder: {work})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
