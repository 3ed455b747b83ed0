"""A document as Markdown (report.md): the same sections, tables whole, figures as the PNGs beside it."""

from __future__ import annotations

from commprof.render.document import Document, Figure, Table, Text


def markdown_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [line(headers), "|" + "|".join("---" for _ in headers) + "|", *(line(row) for row in rows)]


def render(document: Document) -> str:
    lines = [f"# {document.title}", ""]
    for section in document.sections:
        if section.title:
            lines += [f"{'#' * section.level} {section.title}", ""]
        for block in section.blocks:
            lines += _block(block)
    return "\n".join(lines)


def _block(block: Text | Table | Figure) -> list[str]:
    if isinstance(block, Table):
        return [*markdown_table(block.headers, block.rows), ""]
    if isinstance(block, Figure):
        return [f"![{block.alt}]({block.file})", ""]
    text, style = block.text, block.style
    if style == "headline":
        return [f"**{text}**", ""]
    if style == "alert":
        return [f"> **{text}**", ""]
    if style == "strong":
        return [f"**{text}**", ""]
    if style in ("item", "note"):
        return [f"- {text}", ""]
    if style == "action":
        return [f"- do: `{text}`", ""]
    if style == "code":
        return ["```python", text, "```", ""]
    return [text, ""]
