"""Every result is saved as report.json and loaded back here, one way, whatever its kind."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any, get_args, get_type_hints

import msgspec

from commprof.errors import UsageError, why_not_written
from commprof.results.backends import BackendsResult
from commprof.results.bench import BenchResult
from commprof.results.common import SCHEMA_VERSION, Result
from commprof.results.compare import CompareResult
from commprof.results.diff import DiffResult
from commprof.results.finding_facts import FACTS_OF
from commprof.results.job import upgraded
from commprof.results.report import CrossRank, Finding, Report
from commprof.results.run_record import RunSummary
from commprof.results.scale import ScaleReport

KINDS: dict[str, type] = {
    "run": Report,
    "analysis": Report,
    "sweep": Report,
    "tune": Report,
    "advise": Report,
    "scale": ScaleReport,
    "bench": BenchResult,
    "compare": CompareResult,
    "backends": BackendsResult,
    "diff": DiffResult,
}
FILE_NAME = "report.json"


def check_writable(*folders: Path) -> None:
    """Each folder (or, until it exists, the nearest of its parents that does) takes new files: really written,
    since permission bits say nothing to root, nor to a read-only or full file system."""
    for path in folders:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{path} exists and is not a folder")
        parent = path if path.exists() else next((p for p in path.parents if p.exists()), Path("."))
        try:
            with tempfile.TemporaryFile(dir=parent):
                pass
        except OSError as exc:
            raise UsageError(f"{path}: cannot write there ({why_not_written(parent, exc)})") from None


def save_result(result: Result, folder: Path) -> Path:
    """Written whole or not at all (a reader never sees half a file)."""
    path = folder / FILE_NAME
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(result.to_json())
    os.replace(tmp, path)
    return path


def find_report(given: Path, reports_dir: Path = Path("reports")) -> Path:
    """What a command that takes a report was given: a report.json, its folder, or a run id (or report name) under
    `reports_dir`, as `commprof run --run-id` named it."""
    if given.exists() or len(given.parts) != 1 or not (reports_dir / given).is_dir():
        return given
    return reports_dir / given


def load_result(path: Path, reports_dir: Path = Path("reports")) -> Result:
    """A report.json of any kind (or the folder that holds it, or a run id under `reports_dir`)."""
    path = find_report(path, reports_dir)
    path = path / FILE_NAME if path.is_dir() else path
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(
            f"{path}: no such report; give a report.json, its folder, or a run id under {reports_dir}/"
        ) from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UsageError(f"{path}: not a commprof report (no schema_version)")
    if data["schema_version"] > SCHEMA_VERSION:
        raise UsageError(
            f"{path}: report schema {data['schema_version']} is newer than this commprof "
            f"understands ({SCHEMA_VERSION}); upgrade commprof"
        )
    cls = KINDS.get(data.get("kind", "run"))
    if cls is None:
        raise UsageError(f"{path}: unknown report kind {data.get('kind')!r}")
    try:
        return _build(cls, data)
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: malformed report ({exc})") from None


def load_report(path: Path, reports_dir: Path = Path("reports")) -> Report:
    """A run, analysis, sweep or tune report: the kinds that have per-rank breakdowns."""
    result = load_result(path, reports_dir)
    if not isinstance(result, Report):
        kind = getattr(result, "kind", "?")
        raise UsageError(f"{path}: a `commprof {kind}` report, which has no per-step breakdown to use here")
    return result


def _build(cls: Any, data: Any) -> Any:
    """Rebuild nested dataclasses from plain JSON data, ignoring unknown keys (a run's record of an older commprof
    upgraded: results/job.upgraded)."""
    hints = get_type_hints(cls)
    if cls is RunSummary:
        data = upgraded(data)
    if cls is Finding and data.get("facts") is not None:  # the kind says which facts
        hints = {**hints, "facts": FACTS_OF[data["kind"]]}
    if cls is CrossRank and isinstance(data.get("alignment"), str):  # an older report: its words
        data = {**data, "alignment": {"how": "", "said": data["alignment"]}}
    return cls(**{f.name: _convert(hints[f.name], data[f.name]) for f in dataclasses.fields(cls) if f.name in data})


def _convert(hint: Any, value: Any) -> Any:
    origin = getattr(hint, "__origin__", None)
    args = getattr(hint, "__args__", ())
    if origin is list and args and _is_struct(args[0]):  # the job's instances, each tagged with its kind
        return msgspec.convert(value, hint)
    if origin is not list and _is_struct(hint):  # a failure's facts, tagged with their kind (optional or not)
        return None if value is None else msgspec.convert(value, hint)
    if origin is not list and args and type(None) in args:  # Optional[X]
        inner = next(a for a in args if a is not type(None))
        empty = value is None or (value == {} and dataclasses.is_dataclass(inner))  # older reports: "run": {}
        return None if empty else _convert(inner, value)
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return _build(hint, value)
    if origin is list and args and dataclasses.is_dataclass(args[0]):
        return [_build(args[0], v) for v in value]
    if origin is tuple:
        return tuple(value)
    if hint is Path:
        return Path(value)
    return value


def _is_struct(hint: Any) -> bool:
    """A msgspec Struct, or a union of them."""
    return any(isinstance(h, type) and issubclass(h, msgspec.Struct) for h in (hint, *get_args(hint)))
