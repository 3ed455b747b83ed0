"""The Report's renderers under the names every kind shares (render.outputs)."""

from __future__ import annotations

from commprof.render.html import render_html as html
from commprof.render.markdown import render_markdown as markdown
from commprof.render.terminal import show

__all__ = ["html", "images", "markdown", "show"]


def images(report):
    """The report's figures (matplotlib imported only here: it costs a third of a second)."""
    from commprof.render.plots import figures

    return figures(report)
