"""What every result shows, built once: a document of sections, each a heading and blocks (text, tables, figures).

Each kind of result builds its document in its own module (render/report_view.py, scale.py, ...); the terminal,
Markdown and HTML are three renderers of that one document (render/terminal.py, markdown.py, html.py), so a
figure or a number added to a section appears in all three, written the same way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

TextStyle = Literal["plain", "meta", "headline", "alert", "strong", "item", "action", "code", "note"]


@dataclass(frozen=True)
class Text:
    """A paragraph. `headline`: the one sentence a reader came for; `alert`: the report is incomplete; `strong`: a
    finding's title; `item`: a line under it; `action`: a line of code to paste, after 'do: '; `code`: a block of
    code; `note`: one of a list of notes; `meta`: where the result came from."""

    text: str
    style: TextStyle = "plain"


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]]
    left: tuple[str, ...] = ()  # columns aligned left (names); the others right (numbers)
    key: int = 1  # the leading columns that name a row: repeated in every part when a table is split to fit

    def __post_init__(self) -> None:
        assert all(len(row) == len(self.headers) for row in self.rows), "a cell per header in every row"


@dataclass(frozen=True)
class Figure:
    """A PNG the result's images() draws (render/plots.py), by its file name beside report.md."""

    file: str
    alt: str


Block = Text | Table | Figure


@dataclass(frozen=True)
class Section:
    title: str  # "" for the blocks before the first heading
    blocks: Sequence[Block] = field(default_factory=list)
    level: int = 2  # 2: a section, 3: a part of the one before


@dataclass(frozen=True)
class Document:
    title: str
    sections: list[Section]

    def tables(self) -> list[Table]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Table)]

    def texts(self) -> list[Text]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Text)]


def notes_section(notes: list[str], title: str = "Notes") -> list[Section]:
    """The notes as a section of their own; none when there are none."""
    return [Section(title, [Text(n, "note") for n in notes])] if notes else []
