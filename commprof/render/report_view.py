"""The Report's renderers under the names every kind shares (render.outputs)."""

from __future__ import annotations

from commprof.render.html import render_html as html
from commprof.render.markdown import render_markdown as markdown
from commprof.render.plots import figures as images
from commprof.render.terminal import show

__all__ = ["html", "images", "markdown", "show"]
