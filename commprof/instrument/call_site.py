"""Where a script built something commprof records (a DistributedDataParallel, a fully_shard), and what the script
calls the module it passed: the expression of its first argument as written ("discriminator", "self.model"), else,
where that is no name (`DDP(nn.Sequential(...))`), the target the call's result is assigned to ("head" for
`head = DDP(nn.Sequential(...))`)."""

from __future__ import annotations

import ast
import linecache
import os
import re
from types import FrameType

_OURS = ("commprof", "torch")  # frames of these packages are not the caller
_MOST_LINES = 12  # a call written over more lines is named by its class
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,39}")  # folder-safe: a name is part of a setting's label
_CALL = "__commprof_call__"  # stands for the call in its statement's text, to read what its result is assigned to


def call_site(
    frame: FrameType | None, library: str = "", keyword: str = "module", position: int = 0
) -> tuple[str, str]:
    """(where, name) of the first frame outside commprof, torch and `library` above `frame`: "train_gan.py:23" and
    the expression the call passes as `keyword` (else as its positional argument `position`) where it is a plain
    name or attribute, else the target its result is assigned to where the call is the whole right-hand side of an
    assignment to one plain name or attribute (`head = DDP(nn.Sequential(...))`: "head"), else "". The call is the
    one the frame is in (its columns, on Python 3.11 and later), else the first on its line: `gen, disc = DDP(g),
    DDP(d)` names each (by its argument: a tuple target names neither)."""
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in (*_OURS, library):
        frame = frame.f_back
    if frame is None:
        return "", ""
    path, line = frame.f_code.co_filename, frame.f_lineno
    found = _running_call(frame) or _first_call(path, line)
    return f"{os.path.basename(path)}:{line}", _name(found, keyword, position)


def _running_call(frame: FrameType) -> tuple[ast.Call, str] | None:
    """The call expression the frame is executing, from its instruction's source columns (Python 3.11+), and the
    target its result is assigned to ("" where none)."""
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
    before, after = lines[0][:start], lines[-1][end:]  # the call's statement around it, on its first and last lines
    lines[-1] = lines[-1][:end]
    lines[0] = lines[0][start:]
    try:
        tree = ast.parse("".join(lines).strip(), mode="eval")
    except SyntaxError:
        return None
    return (tree.body, _target_around(before, after)) if isinstance(tree.body, ast.Call) else None


def _target_around(before: str, after: str) -> str:
    """The target of the assignment whose whole right-hand side is a call written between `before` and `after` on
    its lines ("" where the text there is no such assignment, or not one statement of its own)."""
    try:
        tree = ast.parse(f"{before.strip()}{_CALL}{after}".strip())
    except SyntaxError:
        return ""
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == _CALL), None)
    return _assigned_to(tree.body[0], call) if tree.body and call is not None else ""


def _first_call(path: str, line: int) -> tuple[ast.Call, str] | None:
    """The first call written on the line (a statement over several lines read whole), and the target its result is
    assigned to ("" where none)."""
    for count in range(1, _MOST_LINES + 1):
        text = "".join(linecache.getline(path, line + i) for i in range(count)).strip()
        try:
            tree = ast.parse(text.rstrip(",").removesuffix("\\"))
        except SyntaxError:
            continue
        call = next((node for node in ast.walk(tree) if isinstance(node, ast.Call)), None)
        return (call, _assigned_to(tree.body[0], call)) if call is not None else None
    return None


def _assigned_to(statement: ast.stmt, value: ast.expr) -> str:
    """The target `statement` assigns `value` to, where `value` is its whole right-hand side and the target one plain
    name or attribute (`head = ...`, `self.head: nn.Module = ...`); "" for any other statement or target (a tuple,
    a subscript, a chain `a = b = ...`)."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target: ast.expr = statement.targets[0]
    elif isinstance(statement, ast.AnnAssign):
        target = statement.target
    else:
        return ""
    if statement.value is not value or not isinstance(target, (ast.Name, ast.Attribute)):
        return ""
    written = ast.unparse(target)
    return written if _NAME.fullmatch(written) else ""


def _name(found: tuple[ast.Call, str] | None, keyword: str, position: int) -> str:
    """The argument's name where it is one, else the target the call's result is assigned to."""
    if found is None:
        return ""
    call, target = found
    return _argument(call, keyword, position) or target


def _argument(call: ast.Call, keyword: str, position: int) -> str:
    given = next((k.value for k in call.keywords if k.arg == keyword), None)
    if given is None and len(call.args) > position:
        given = call.args[position]
    written = ast.unparse(given) if given is not None else ""
    return written if _NAME.fullmatch(written) else ""


def _first_argument(path: str, line: int, keyword: str = "module", position: int = 0) -> str:
    """The name of the first call's module on a script's line: its argument, else the target it is assigned to
    (tests read a file's lines this way)."""
    return _name(_first_call(path, line), keyword, position)


def unique(name: str, taken: list[str]) -> str:
    """`name`, or `name#2` (#3, ...) where the script already built one of that name."""
    if name not in taken:
        return name
    return next(f"{name}#{n}" for n in range(2, len(taken) + 2) if f"{name}#{n}" not in taken)
