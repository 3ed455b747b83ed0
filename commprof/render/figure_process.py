"""A result's figures and TensorBoard event files made in a process of their own, started before the analysis,
so that importing matplotlib and tensorboard's writer (about 0.5 s together) and drawing run on another core
while the traces are decoded and classified, and while this process writes the other files."""

from __future__ import annotations

import importlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable

from commprof.results.common import Result


class FigureProcess:
    def __init__(self) -> None:
        self._pool = ProcessPoolExecutor(max_workers=1)
        self._pool.submit(_import_renderers)  # starts the process and its imports now; the work queues behind

    def draw(self, result: Result) -> Callable[[], dict[str, bytes]]:
        """Starts drawing; what it returns waits for the images."""
        return self._pool.submit(_images, result).result

    def write_events(self, result: Result, logdir: Path) -> Callable[[], Path | None]:
        """Starts writing the TensorBoard event files (render.tensorboard.write_events); what it returns waits."""
        from commprof.render.tensorboard import write_events

        return self._pool.submit(write_events, result, logdir).result

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


def _import_renderers() -> None:
    importlib.import_module("commprof.render.plots")
    importlib.import_module("tensorboard.summary.writer.event_file_writer")


def _images(result: Result) -> dict[str, bytes]:
    from commprof.render.views import view_of

    return view_of(result).images(result)
