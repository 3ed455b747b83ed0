"""A document as report.html: one self-contained file (inline CSS, images as data URIs, no script, nothing
fetched)."""

from __future__ import annotations

import base64
from html import escape

from commprof.render.document import Document, Figure, Table, Text

STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
.incomplete { background: #fde8e8; border-left: 4px solid #c0392b; padding: 0.5em 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
.headline { font-size: 1.1em; background: #fff4e6; border-left: 4px solid #DD8452; padding: .6em 1em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
code, pre { background: #f6f6f6; padding: .2em .4em; }
.meta { color: #666; font-size: .9em; } .note { color: #8a5a00; } .item { margin: .2em 0 .2em 1.5em; }
"""


def html_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_image(images: dict[str, bytes], name: str, alt: str) -> str:
    if name not in images:
        return ""
    data = base64.b64encode(images[name]).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def page(title: str, body: list[str]) -> str:
    """A whole self-contained page: inline style, no script, nothing fetched."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )


CLASSES = {"headline": "headline", "alert": "incomplete", "meta": "meta"}


def render(document: Document, images: dict[str, bytes]) -> str:
    body = [f"<h1>{escape(document.title)}</h1>"]
    for section in document.sections:
        if section.title:
            body.append(f"<h{section.level}>{escape(section.title)}</h{section.level}>")
        notes: list[str] = []
        for block in section.blocks:
            if isinstance(block, Text) and block.style == "note":
                notes.append(f'<li class="note">{escape(block.text)}</li>')
                continue
            if notes:
                body.append(f"<ul>{''.join(notes)}</ul>")
                notes = []
            body.append(_block(block, images))
        if notes:
            body.append(f"<ul>{''.join(notes)}</ul>")
    return page(document.title, body)


def _block(block: Text | Table | Figure, images: dict[str, bytes]) -> str:
    if isinstance(block, Table):
        return html_table(block.headers, block.rows)
    if isinstance(block, Figure):
        return html_image(images, block.file, block.alt)
    text, style = escape(block.text), block.style
    if style == "strong":
        return f"<p><b>{text}</b></p>"
    if style == "action":
        return f'<p class="item">do: <code>{text}</code></p>'
    if style == "code":
        return f"<pre>{text}</pre>"
    if style == "item":
        return f'<p class="item">{text}</p>'
    css = CLASSES.get(style)
    return f'<p class="{css}">{text}</p>' if css else f"<p>{text}</p>"
