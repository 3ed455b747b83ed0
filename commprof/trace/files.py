"""Find trace files and read their bytes (.json or .json.gz)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from commprof.errors import TraceError, UsageError

TRACE_SUFFIXES = (".json", ".json.gz")
NOT_TRACES = {"run.json", "report.json", "timeline.json"}


def find_trace_files(paths: list[Path]) -> list[Path]:
    """Expand folders (recursively) into trace files; keep explicit files as given."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and _looks_like_trace(p))
            if not files:
                raise UsageError(f"{path}: no trace files (*.json, *.json.gz) in this folder")
            found += files
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"{path}: no such file or folder")
    return found


def _looks_like_trace(path: Path) -> bool:
    name = path.name
    return name.endswith(TRACE_SUFFIXES) and name not in NOT_TRACES and not name.startswith(".")


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
