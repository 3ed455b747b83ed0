"""A result's figures drawn in a process of their own, started before the analysis, so that importing
matplotlib (about 0.3 s) and drawing run on another core while the traces are decoded and classified."""

from __future__ import annotations

import importlib
from concurrent.futures import ProcessPoolExecutor

from commprof.results.common import Result


class FigureProcess:
    def __init__(self) -> None:
        self._pool = ProcessPoolExecutor(max_workers=1)
        self._pool.submit(_import_plots)  # starts the process and its import now; the drawing queues behind it

    def images(self, result: Result) -> dict[str, bytes]:
        return self._pool.submit(_images, result).result()

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


def _import_plots() -> None:
    importlib.import_module("commprof.render.plots")


def _images(result: Result) -> dict[str, bytes]:
    from commprof.render.outputs import view_of

    return view_of(result).images(result)
