"""The report.json commprof writes for each real trace folder in tests/data/traces, kept as golden files.

`python tests/golden_reports.py` rewrites tests/data/golden/ (do it only when a change of numbers is
intended, and say so in the commit); tests/test_golden_reports.py checks that nothing else moved.
Volatile fields (creation time, absolute paths) are removed before comparing."""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
TRACES = DATA / "traces"
GOLDEN = DATA / "golden"
FOLDERS = [
    "gloo-cpu-rank34-of-300",
    "missing-fields",
    "nccl-a100-rank0-of-16",
    "nccl-a100-rank0-of-2",
    "nccl-sampled-2-of-128",
    "nccl-trace-diff/control",
    "nccl-trace-diff/test",
    "nccl-v100-world1",
    "rccl-mi300-rank0-of-8",
]
VOLATILE = ("created", "sources")


def golden_name(folder: str) -> str:
    return folder.replace("/", "__") + ".json"


def normalized(report: dict) -> dict:
    """report.json without what differs between two analyses of the same traces."""
    data = {k: v for k, v in report.items() if k not in VOLATILE}
    data["skipped"] = [{**s, "path": Path(s["path"]).name} for s in data.get("skipped", [])]
    data["warnings"] = [w.replace(str(TRACES) + "/", "") for w in data.get("warnings", [])]
    return data


def analyze_folder(folder: str, out: Path) -> dict:
    from commprof.cli.app import main

    try:
        main(
            [
                "analyze",
                str(TRACES / folder),
                "--name",
                "golden",
                "--reports-dir",
                str(out),
                "--quiet",
                "--workers",
                "1",
            ]
        )
    except SystemExit as exc:
        if exc.code:
            raise RuntimeError(f"commprof analyze {folder} exited {exc.code}") from None
    return normalized(json.loads((out / "golden" / "report.json").read_text()))


def differences(expected, actual, where: str = "") -> list[str]:
    """Field-by-field differences; numbers must agree to 1e-9 (relative)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{where}.{k}: missing" for k in expected.keys() - actual.keys()]
        out += [f"{where}.{k}: new field" for k in actual.keys() - expected.keys()]
        for key in expected.keys() & actual.keys():
            out += differences(expected[key], actual[key], f"{where}.{key}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {len(expected)} items, now {len(actual)}"]
        return [
            d
            for i, (e, a) in enumerate(zip(expected, actual, strict=False))
            for d in differences(e, a, f"{where}[{i}]")
        ]
    if isinstance(expected, float) or isinstance(actual, float):
        if (
            isinstance(expected, (int, float))
            and isinstance(actual, (int, float))
            and math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-9)
        ):
            return []
    elif expected == actual:
        return []
    return [f"{where}: {expected!r} -> {actual!r}"]


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for folder in FOLDERS:
        with tempfile.TemporaryDirectory() as tmp:
            report = analyze_folder(folder, Path(tmp))
        (GOLDEN / golden_name(folder)).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN / golden_name(folder)}", file=sys.stderr)


if __name__ == "__main__":
    main()
