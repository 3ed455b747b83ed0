"""Find trace files and read their bytes (.json or .json.gz)."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

from commprof.errors import TraceError, UsageError

TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = {"run.json", "report.json", "timeline.json", "sweep.json", "error.json"}
NOT_TRACE_SUFFIXES = (".steps.json", ".ledger.json", ".groups.json")  # a rank's step log, whole-run record and groups
NOT_TRACE_FOLDERS = {"logs"}  # worker logs beside the traces
# Horovod's timeline beside the traces: merged into rank 0's (trace/horovod_timeline.py)
HOROVOD_TIMELINE = re.compile(r"(horovod.*timeline|timeline.*horovod).*\.json(\.gz)?$", re.IGNORECASE)


def find_trace_files(paths: list[Path]) -> list[Path]:
    """Expand folders (recursively) into trace files; keep explicit files as given."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and _looks_like_trace(p) and not NOT_TRACE_FOLDERS & set(p.relative_to(path).parts[:-1])
            )
            if not files:
                raise UsageError(f"{path}: no trace files (*.json, *.json.gz) in this folder")
            found += files
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"{path}: no such file or folder")
    seen: dict[Path, Path] = {}
    for path in found:
        if (same := seen.setdefault(path.resolve(), path)) is not path:
            raise UsageError(f"the same file given twice: {same}" + (f" (also as {path})" if same != path else ""))
    return found


def _looks_like_trace(path: Path) -> bool:
    name = path.name
    return not HOROVOD_TIMELINE.search(name) and (
        name.endswith(TRACE_SUFFIXES)
        and not name.endswith(NOT_TRACE_SUFFIXES)
        and name not in NOT_TRACES
        and not name.startswith(".")
    )


def read_trace_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceError(str(path), f"cannot read: {exc.strerror}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(str(path), f"broken gzip data ({exc})") from None
    if not data.strip():
        raise TraceError(str(path), "the file is empty")
    return data
