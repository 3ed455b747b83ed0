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


def call_site(frame: FrameType | None, library: str = "", keyword: str = "module") -> tuple[str, str]:
    """(where, name) of the first frame outside commprof, torch and `library` above `frame`: "train_gan.py:23" and
    the expression of the call's first argument (or its `keyword` argument) where it is a plain name or attribute
    ("" where not)."""
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in (*_OURS, library):
        frame = frame.f_back
    if frame is None:
        return "", ""
    path, line = frame.f_code.co_filename, frame.f_lineno
    return f"{os.path.basename(path)}:{line}", _first_argument(path, line, keyword)


def _first_argument(path: str, line: int, keyword: str = "module") -> str:
    for count in range(1, _MOST_LINES + 1):
        text = "".join(linecache.getline(path, line + i) for i in range(count)).strip()
        try:
            tree = ast.parse(text.rstrip(",").removesuffix("\\"))
        except SyntaxError:
            continue
        call = next((node for node in ast.walk(tree) if isinstance(node, ast.Call)), None)
        if call is None:
            return ""
        module = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == keyword), None)
        written = ast.unparse(module) if module is not None else ""
        return written if _NAME.fullmatch(written) else ""
    return ""


def unique(name: str, taken: list[str]) -> str:
    """`name`, or `name#2` (#3, ...) where the script already built one of that name."""
    if name not in taken:
        return name
    return next(f"{name}#{n}" for n in range(2, len(taken) + 2) if f"{name}#{n}" not in taken)
