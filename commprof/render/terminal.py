"""A document in the terminal, or in a log: nothing is ever cut. A table wider than the console is split into
parts, each repeating the columns that name a row, and says so; one that cannot fit even so is stacked, a block
of 'header: value' lines per row. Text wraps at words. Plain text in a pipe, bold headings in a terminal."""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.markup import escape

from commprof.render.document import Document, Figure, Table, Text

GAP = "  "
STYLES = {"headline": "bold", "alert": "bold red", "note": "yellow", "meta": "dim"}
PREFIX = {"item": "   ", "action": "   do: ", "code": "  "}


def show(document: Document, console: Console) -> None:
    console.print(f"[bold]{escape(document.title)}[/]")
    for section in document.sections:
        if section.title:
            console.print(f"[bold]{escape(section.title)}[/]")
        for block in section.blocks:
            if isinstance(block, Text):
                _text(block, console)
            elif isinstance(block, Table):
                for line in table_lines(block, console.width):
                    console.print(line, markup=False, highlight=False, soft_wrap=True)
            elif isinstance(block, Figure):
                console.print(f"figure: {block.file} ({block.alt}), in report.html and report.md", markup=False)


def _text(block: Text, console: Console) -> None:
    prefix = PREFIX.get(block.style, "")
    style = STYLES.get(block.style)
    line = escape(prefix + block.text)
    console.print(f"[{style}]{line}[/]" if style else line, highlight=False)


def table_lines(table: Table, width: int) -> list[str]:
    """The table as lines of at most `width` characters: whole, split into parts, or stacked by row."""
    widths = [max([len(h), *(len(row[i]) for row in table.rows)]) for i, h in enumerate(table.headers)]
    key = list(range(min(table.key, len(widths))))
    parts = _parts(widths, key, width)
    if parts is None:
        return _stacked(table, key, width)
    lines: list[str] = []
    for number, columns in enumerate(parts, 1):
        if len(parts) > 1:
            lines.append(f"(part {number} of {len(parts)}, split to fit {width} columns)")
        lines += _aligned(table, columns, widths)
    return lines


def _parts(widths: list[int], key: list[int], width: int) -> list[list[int]] | None:
    """Columns per part: all of them when they fit, else the key columns and as many more as fit, in order.
    None when the key columns and one more do not fit."""

    def line_width(columns: list[int]) -> int:
        return sum(widths[c] for c in columns) + len(GAP) * (len(columns) - 1)

    if line_width(list(range(len(widths)))) <= width:
        return [list(range(len(widths)))]
    parts: list[list[int]] = []
    current = list(key)
    for column in range(len(key), len(widths)):
        if line_width([*current, column]) <= width:
            current.append(column)
        elif len(current) > len(key):
            parts.append(current)
            current = [*key, column]
            if line_width(current) > width:
                return None
        else:
            return None
    if len(current) > len(key) or not parts:
        parts.append(current)
    return parts


def _aligned(table: Table, columns: list[int], widths: list[int]) -> list[str]:
    def cell(text: str, column: int) -> str:
        left = table.headers[column] in table.left or column < table.key
        return text.ljust(widths[column]) if left else text.rjust(widths[column])

    def line(cells: tuple[str, ...]) -> str:
        return GAP.join(cell(cells[c], c) for c in columns).rstrip()

    rule = GAP.join("-" * widths[c] for c in columns)
    return [line(table.headers), rule, *(line(row) for row in table.rows), ""]


def _stacked(table: Table, key: list[int], width: int) -> list[str]:
    """A block per row: its key cells, then 'header: value' per other column, wrapped at words."""
    lines: list[str] = []
    for row in table.rows:
        lines.append(" ".join(f"{table.headers[c]} {row[c]}" for c in key) or "-")
        for column in range(len(key), len(table.headers)):
            lines += textwrap.wrap(
                f"{table.headers[column]}: {row[column]}",
                width,
                initial_indent="  ",
                subsequent_indent="    ",
                break_long_words=False,
                break_on_hyphens=False,
            ) or [f"  {table.headers[column]}:"]
        lines.append("")
    return lines
