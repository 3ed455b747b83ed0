"""Where a script built something commprof records (a DistributedDataParallel, a fully_shard), and what the script
calls the module it passed: the expression of its first argument as written ("discriminator", "self.model")."""

from __future__ import annotations

import ast
import linecache
import os
import re
from types import FrameType

_OURS = ("commprof", "torch")  # frames of these packages are not the caller
_MOST_LINES = 12  # a call written over more lines is named by its class
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,39}")  # folder-safe: a name is part of a setting's label


def call_site(
    frame: FrameType | None, library: str = "", keyword: str = "module", position: int = 0
) -> tuple[str, str]:
    """(where, name) of the first frame outside commprof, torch and `library` above `frame`: "train_gan.py:23" and
    the expression the call passes as `keyword` (else as its positional argument `position`) where it is a plain
    name or attribute ("" where not). The call is the one the frame is in (its columns, on Python 3.11 and later),
    else the first on its line: `gen, disc = DDP(g), DDP(d)` names each."""
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in (*_OURS, library):
        frame = frame.f_back
    if frame is None:
        return "", ""
    path, line = frame.f_code.co_filename, frame.f_lineno
    call = _running_call(frame) or _first_call(path, line)
    return f"{os.path.basename(path)}:{line}", _argument(call, keyword, position) if call is not None else ""


def _running_call(frame: FrameType) -> ast.Call | None:
    """The call expression the frame is executing, from its instruction's source columns (Python 3.11+)."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:
        return None
    try:
        first, last, start, end = list(positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return None
    if None in (first, last, start, end):
        return None
    assert first is not None and last is not None and start is not None and end is not None
    lines = [linecache.getline(frame.f_code.co_filename, n) for n in range(first, last + 1)]
    lines[-1] = lines[-1][:end]
    lines[0] = lines[0][start:]
    try:
        tree = ast.parse("".join(lines).strip(), mode="eval")
    except SyntaxError:
        return None
    return tree.body if isinstance(tree.body, ast.Call) else None


def _first_call(path: str, line: int) -> ast.Call | None:
    """The first call written on the line (a statement over several lines read whole)."""
    for count in range(1, _MOST_LINES + 1):
        text = "".join(linecache.getline(path, line + i) for i in range(count)).strip()
        try:
            tree = ast.parse(text.rstrip(",").removesuffix("\\"))
        except SyntaxError:
            continue
        return next((node for node in ast.walk(tree) if isinstance(node, ast.Call)), None)
    return None


def _argument(call: ast.Call, keyword: str, position: int) -> str:
    given = next((k.value for k in call.keywords if k.arg == keyword), None)
    if given is None and len(call.args) > position:
        given = call.args[position]
    written = ast.unparse(given) if given is not None else ""
    return written if _NAME.fullmatch(written) else ""


def _first_argument(path: str, line: int, keyword: str = "module", position: int = 0) -> str:
    """The argument of the first call on a script's line (tests read a file's lines this way)."""
    call = _first_call(path, line)
    return _argument(call, keyword, position) if call is not None else ""


def unique(name: str, taken: list[str]) -> str:
    """`name`, or `name#2` (#3, ...) where the script already built one of that name."""
    if name not in taken:
        return name
    return next(f"{name}#{n}" for n in range(2, len(taken) + 2) if f"{name}#{n}" not in taken)
