"""Load trace files into a RunTrace: parse and classify each rank in its own process."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from commprof.errors import TraceError, UsageError
from commprof.trace.classify import UNKNOWN_RANK, _rank, classify
from commprof.trace.files import find_trace_files
from commprof.trace.groups import read_rows, with_groups
from commprof.trace.horovod_timeline import merged, read_timeline, timeline_beside
from commprof.trace.model import RankTrace, RunTrace, SkippedFile
from commprof.trace.parse import parse_trace

T = TypeVar("T")


def load_rank(path: Path) -> RankTrace | SkippedFile:
    try:
        trace = parse_trace(path)
        timeline = timeline_beside(path)
        if timeline is not None and _rank(path, trace.distributedInfo or {})[0] == 0:  # Horovod's coordinator's
            trace = merged(trace, read_timeline(timeline))
        rank = classify(path, trace)
        # commprof's record of each collective's group, where the trace has none
        return with_groups(rank, read_rows(path, rank.rank)) if rank.groups else rank
    except TraceError as exc:
        return SkippedFile(str(path), exc.problem)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Without the cyclic garbage collector: classifying and digesting a trace build hundreds of thousands of
    tuples and lists and no cycles, and the collector's passes over them took a quarter of the time.
    Reference counting frees them as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_run(paths: list[Path], workers: int | None = None) -> RunTrace:
    return load_run_with(paths, workers, None)[0]


def load_run_with(
    paths: list[Path],
    workers: int | None,
    prepare: Callable[[RankTrace], tuple[RankTrace, T]] | None,
    executor: Executor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[RunTrace, dict[str, T]]:
    """Load every trace file in its own process (`workers` at once), or as tasks of `executor` (a Dask cluster's:
    on its workers, which must see the files). `prepare` (a module-level function) runs on each rank where it
    was loaded: it may slim the record, and what it returns beside the record comes back by the file's path.
    `progress(done, total)` after each file."""
    files = find_trace_files(paths)
    workers = min(len(files), workers or os.cpu_count() or 1)
    load = functools.partial(load_and_prepare, prepare=prepare)
    if executor is not None:
        loaded = _in_order(executor, load, files, progress)
    elif workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            loaded = _in_order(pool, load, files, progress)
    else:
        loaded = []
        for path in files:
            loaded.append(load(path))
            if progress is not None:
                progress(len(loaded), len(files))
    prepared = {trace.path: extra for trace, extra in loaded if isinstance(trace, RankTrace) and prepare is not None}
    ranks = _number_unranked([r for r, _ in loaded if isinstance(r, RankTrace)])
    skipped = [s for s, _ in loaded if isinstance(s, SkippedFile)]
    if not ranks:
        if len(skipped) == 1:
            raise TraceError(skipped[0].path, skipped[0].reason)
        raise UsageError("no usable trace: " + "; ".join(f"{s.path}: {s.reason}" for s in skipped))
    _check_one_run(ranks)
    return RunTrace(ranks=tuple(sorted(ranks, key=lambda r: r.rank)), skipped=tuple(skipped)), prepared


def _in_order(executor: Executor, load, files: list[Path], progress) -> list:
    """Every file as a task; results in file order, progress as they complete."""
    futures = {executor.submit(load, path): index for index, path in enumerate(files)}
    loaded: list = [None] * len(files)
    for done, future in enumerate(as_completed(futures), 1):
        loaded[futures[future]] = future.result()
        if progress is not None:
            progress(done, len(files))
    return loaded


def load_and_prepare(path: Path, prepare) -> tuple[RankTrace | SkippedFile, Any]:
    """One rank's trace loaded and `prepare`d (e.g. analysis.digest.digest), the collector paused."""
    with collector_paused():
        loaded = load_rank(path)
        return prepare(loaded) if prepare is not None and isinstance(loaded, RankTrace) else (loaded, None)


def _number_unranked(ranks: list[RankTrace]) -> list[RankTrace]:
    """Files that name no rank get the smallest ranks no other file claims, in file order."""
    taken = {r.rank for r in ranks}
    free = (n for n in range(len(ranks) + len(taken)) if n not in taken)
    numbered = []
    for rank in ranks:
        if rank.rank == UNKNOWN_RANK:
            n = next(free)
            note = (
                f"{Path(rank.path).name}: no distributedInfo.rank and none in the file name; "
                f"assumed rank {n} from file order"
            )
            rank = dataclasses.replace(rank, rank=n, warnings=rank.warnings + (note,))
        numbered.append(rank)
    return numbered


def _check_one_run(ranks: list[RankTrace]) -> None:
    sizes = {r.world_size for r in ranks if r.world_size is not None}
    if len(sizes) > 1:
        detail = ", ".join(f"{Path(r.path).name} (world size {r.world_size})" for r in ranks)
        raise UsageError(f"traces from different runs mixed together: {detail}; analyse one run at a time")
    seen: dict[int, str] = {}
    for rank in ranks:
        if rank.rank in seen:
            raise UsageError(
                f"two files claim rank {rank.rank}: {seen[rank.rank]}, {rank.path} (traces from "
                "different runs mixed together?); analyse one run at a time"
            )
        seen[rank.rank] = rank.path
