"""A user's own traceback, as python would have shown it, from the one a rank recorded.

A rank of `commprof run -- train.py` runs the script inside commprof's runner (worker/script.py), so the
traceback its error file records (torch elastic's `py_callstack`, traceback.format_exc()) begins with commprof's
own frames, and runpy's for `-m`. Without those leading frames it is the traceback `python train.py` prints.
An error commprof raised itself (the script exited non-zero, never joined a process group) has no frame of the
script's, and no traceback is shown for it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import commprof

HEADER = "Traceback (most recent call last):"
MAX_FRAMES = 12  # of each traceback; the earlier ones are counted, and stay in the worker logs
_CHAIN = re.compile(
    r"^(The above exception was the direct cause of the following exception:|"
    r"During handling of the above exception, another exception occurred:)$"
)
_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line \d+')
_PACKAGE = Path(commprof.__file__).resolve().parent


@dataclass(frozen=True)
class Section:
    """One traceback of a chain: its frames (each its lines) and the exception's lines after them."""

    header: bool
    frames: list[list[str]]
    exception: list[str]


def user_traceback(recorded: str, package: Path = _PACKAGE) -> str:
    """The traceback without the frames of commprof's runner (and runpy's) that lead into the user's code, the
    last MAX_FRAMES frames of each traceback of a chain; "" when no frame is left (commprof's own error)."""
    chain = [(separator, _parse(lines)) for separator, lines in _split_chain(recorded)]
    kept = [(separator, _without_runner(section, package)) for separator, section in chain]
    if not any(section.frames for _, section in kept):
        return ""
    out: list[str] = []
    for separator, section in kept:
        if separator:
            out += ["", separator, ""]
        out += _lines(section)
    return "\n".join(out).strip("\n")


def _split_chain(text: str) -> list[tuple[str, list[str]]]:
    """[(the sentence that joins it to the one before, or "", its lines)] in order."""
    parts: list[tuple[str, list[str]]] = [("", [])]
    for line in text.rstrip("\n").splitlines():
        if _CHAIN.match(line):
            parts.append((line, []))
        else:
            parts[-1][1].append(line)
    return [(separator, _trimmed(lines)) for separator, lines in parts]


def _trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _parse(lines: list[str]) -> Section:
    header = bool(lines) and lines[0] == HEADER
    rest = lines[1:] if header else lines
    frames: list[list[str]] = []
    index = 0
    while index < len(rest) and header and rest[index].startswith("  "):
        if _FRAME.match(rest[index]) or not frames:
            frames.append([rest[index]])
        else:  # the frame's source line, its carets, or "[Previous line repeated N more times]"
            frames[-1].append(rest[index])
        index += 1
    return Section(header, frames, rest[index:])


def _without_runner(section: Section, package: Path) -> Section:
    frames = list(section.frames)
    while frames and _is_runner(frames[0][0], package):
        frames.pop(0)
    return Section(section.header, frames, section.exception)


def _is_runner(frame_line: str, package: Path) -> bool:
    match = _FRAME.match(frame_line)
    if match is None:
        return False
    file = match.group("file")
    if file == "<frozen runpy>" or Path(file).name == "runpy.py":
        return True
    try:
        return Path(file).resolve().is_relative_to(package)
    except (OSError, ValueError):
        return False


def _lines(section: Section) -> list[str]:
    if not section.frames:  # an exception with no frame to show: its lines alone, as python shows a chained one
        return section.exception
    frames = section.frames[-MAX_FRAMES:]
    hidden = len(section.frames) - len(frames)
    lines = [HEADER]
    if hidden:
        lines.append(f"  [{hidden} earlier frame{'s' if hidden > 1 else ''} not shown: the worker logs have them]")
    for frame in frames:
        lines += frame
    return lines + section.exception
