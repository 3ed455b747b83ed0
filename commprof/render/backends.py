"""`commprof backends` output: the capability matrix, and why each cell failed or was not tried."""

from __future__ import annotations

from commprof.backends import BACKENDS
from commprof.render.document import Document, Section, Table, Text, notes_section
from commprof.results.backends import DEVICES, BackendsResult

TITLE = "Capability matrix of this installation (2 ranks; works / fails / - not available here)"


def headers() -> tuple[str, ...]:
    return ("op", *(f"{b} {d.replace('cuda', 'gpu')}" for b in BACKENDS for d in DEVICES))


def _word(cell: list | None) -> str:
    return "-" if cell is None else "works" if cell[0] else "fails"


def rows(result: BackendsResult) -> list[tuple[str, ...]]:
    return [(op, *(_word(result.cell(b, d, op)) for b in BACKENDS for d in DEVICES)) for op in result.ops]


def notes(result: BackendsResult) -> list[str]:
    failed = [
        f"fails: {b} {d} {op}: {cell[1]}"
        for op in result.ops
        for b in BACKENDS
        for d in DEVICES
        if (cell := result.cell(b, d, op)) is not None and not cell[0]
    ]
    return failed + [f"not available here: {key}: {why}" for key, why in result.not_available.items()]


def document(result: BackendsResult) -> Document:
    matrix = Section("", [Text(TITLE), Table(headers(), rows(result), left=("op",))])
    return Document("commprof backends", [matrix, *notes_section(notes(result))])


def images(result: BackendsResult) -> dict[str, bytes]:
    return {}
