"""Per-rank work done in the process that loaded the rank, so that only small records travel back.

Each rank's step breakdowns are computed where its trace was parsed. Beyond the first
MAX_DETAILED_RANKS ranks the interval lists are then dropped: the cross-rank analysis needs only
steps and collectives, and the timelines (typical step, timeline.json) show the first ranks. The
parent's memory then grows by a few kilobytes per rank, not by the size of each trace.

A multi-node run digests each rank's trace where it was written, at the end of training, and rank 0
keeps the digests of the other nodes' ranks (DIGESTS_FOLDER): the report covers every rank even when
the nodes share no file system, and the analysis is spread over the job's nodes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec

from commprof.analysis.breakdown import breakdown_step, step_windows
from commprof.analysis.whole_trace import hta_windows
from commprof.results.report import StepBreakdown
from commprof.trace.load import load_and_prepare
from commprof.trace.model import RankTrace, RunTrace

MAX_DETAILED_RANKS = 64


def digest_hta(rank: RankTrace) -> tuple[RankTrace, tuple[StepBreakdown, ...]]:
    """digest() of the rank as Holistic Trace Analysis sees it (one window per GPU rank)."""
    return digest(hta_windows(rank))


def digest(rank: RankTrace) -> tuple[RankTrace, tuple[StepBreakdown, ...]]:
    """The rank's step breakdowns, and the record itself, slimmed beyond the first ranks."""
    windows = step_windows(rank)
    breakdowns = tuple(breakdown_step(rank, w) for w in windows)
    if rank.rank < MAX_DETAILED_RANKS:  # also the ranks not yet numbered (-1)
        return rank, breakdowns
    return dataclasses.replace(
        rank, steps=tuple(windows), compute=(), communication=(), memory=(), intervals_dropped=True
    ), breakdowns


DIGESTS_FOLDER = "digests"  # in rank 0's run folder: the digests of ranks whose traces are on other nodes
_DIGEST = msgspec.msgpack.Decoder(tuple[RankTrace, tuple[StepBreakdown, ...]])


def own_digest(trace: Path) -> bytes | None:
    """A rank's digest of the trace it just wrote, to travel to rank 0 over the job's process group; None
    when the trace is missing or unusable (the report then says that rank is missing)."""
    if not trace.is_file():
        return None
    loaded, breakdowns = load_and_prepare(trace, digest)
    return msgspec.msgpack.encode((loaded, breakdowns)) if isinstance(loaded, RankTrace) else None


def write_digests(run_dir: Path, digests: dict[int, bytes]) -> None:
    folder = run_dir / DIGESTS_FOLDER
    folder.mkdir(exist_ok=True)
    for rank, data in digests.items():
        (folder / f"rank{rank}.msgpack").write_bytes(data)


def read_digests(run_dir: Path) -> list[tuple[RankTrace, tuple[StepBreakdown, ...]]]:
    """The digests rank 0 gathered from other nodes at the end of the run ([] when there are none)."""
    found = []
    for path in sorted((run_dir / DIGESTS_FOLDER).glob("rank*.msgpack")):
        try:
            found.append(_DIGEST.decode(path.read_bytes()))
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue  # a damaged digest: that rank is reported missing
    return found


def with_digests_from_other_nodes(
    trace: RunTrace, breakdowns: dict[str, Any], run_dir: Path
) -> tuple[RunTrace, dict[str, Any]]:
    """The run with the ranks whose traces are on other nodes added from the digests rank 0 kept (a trace
    present here wins), and their breakdowns by path as load_run_with gives them."""
    present = {r.rank for r in trace.ranks}
    remote = [(rank, steps) for rank, steps in read_digests(run_dir) if rank.rank not in present]
    if not remote:
        return trace, breakdowns
    ranks = tuple(sorted([*trace.ranks, *(rank for rank, _ in remote)], key=lambda r: r.rank))
    return dataclasses.replace(trace, ranks=ranks), {**breakdowns, **{rank.path: steps for rank, steps in remote}}
