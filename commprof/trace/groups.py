"""Process groups: each with its members and description (a trace's `distributedInfo.pg_config`), and each traced
collective given its group where the trace names none (Gloo's CPU ranges), from the rank's own record of the
collectives it entered (instrument/group_record.py: its Flight Recorder's entries, `rank<N>.groups.json`).

A collective of the record is the traced one of the same op and element count whose start follows its creation, the
k-th of that op and size in each (a group's collectives start in the order they were created); the record's entries
are aligned with the traced ones where every entry was created before its collective started (within TOLERANCE_US:
the two clocks are read apart), at the latest such alignment (the earlier entries are the window's previous steps)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from commprof.trace import rules
from commprof.trace.model import Collective, ProcessGroup, RankTrace

GROUPS_FILE = "rank{rank}.groups.json"
TOLERANCE_US = 2000.0
MESH_PREFIX = "mesh_"  # DeviceMesh names each dimension's group "mesh_<dim>"

Row = list[Any]  # [created (epoch us), group name, op, elements]


def groups_of(info: dict[str, Any]) -> tuple[ProcessGroup, ...]:
    """The process groups a trace's distributedInfo names (`pg_config`: a list, or a dict by name in older
    traces), each with its ranks; those it gives no ranks left out."""
    config = info.get("pg_config") or ()
    items = config.values() if isinstance(config, dict) else config
    groups = []
    for pg in items:
        if not isinstance(pg, dict):
            continue
        ranks = pg.get("ranks")
        if isinstance(ranks, str):  # older torch: "[0, 1]"
            try:
                ranks = json.loads(ranks)
            except ValueError:
                continue
        if not isinstance(ranks, list) or not all(isinstance(r, int) for r in ranks):
            continue
        name = str(pg.get("pg_name", pg.get("name", "")))
        groups.append(ProcessGroup(name, str(pg.get("pg_desc", pg.get("desc", ""))), tuple(ranks)))
    return tuple(groups)


def dimension(desc: str) -> str | None:
    """The DeviceMesh dimension a group's description names ("mesh_dp": dp); None where it names none."""
    return desc.removeprefix(MESH_PREFIX) if desc.startswith(MESH_PREFIX) and len(desc) > len(MESH_PREFIX) else None


def entry_row(entry: dict[str, Any]) -> Row | None:
    """One Flight Recorder entry as the record keeps it (a send or receive as a send_recv: a pipeline's, over its
    stage group); None for one it cannot read."""
    described = entry.get("process_group") or ()
    op = rules.normalize_op(str(entry.get("profiling_name", "")))
    created = entry.get("time_created_ns")
    if not described or op is None or not isinstance(created, int):
        return None
    sizes = entry.get("input_sizes") or []
    elements = sum(math.prod(s) for s in sizes if isinstance(s, list | tuple)) if sizes else None
    return [created / 1000.0, str(described[0]), op, elements]


def read_rows(trace: Path, rank: int) -> list[Row]:
    """The rank's record beside its trace; empty where there is none or it cannot be read."""
    path = trace.parent / GROUPS_FILE.format(rank=rank)
    try:
        rows = json.loads(path.read_text()).get("entries", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [r for r in rows if isinstance(r, list) and len(r) == 4]


def with_groups(rank: RankTrace, rows: list[Row]) -> RankTrace:
    """The rank with each collective that names no group given the one its record says, and its size the group's;
    where the record says nothing of one (none was kept, or it was not copied with the trace), the rank's only group
    of its size, if it has one."""
    sizes = {g.name: len(g.ranks) for g in rank.groups}
    streams: dict[tuple[str, int | None], list[Row]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: r[0]):
        streams[(row[2], row[3])].append(row)
    traced: dict[tuple[str, int | None], list[int]] = defaultdict(list)
    for index, call in enumerate(rank.collectives):
        if call.process_group is None:
            traced[(call.op, _elements(call))].append(index)
    named = list(rank.collectives)
    for key, indices in traced.items():
        entries = streams.get(key, [])
        offset = _alignment([rank.base_us + rank.collectives[i].start for i in indices], [e[0] for e in entries])
        if offset is None:
            continue
        for i, entry in zip(indices, entries[offset:], strict=False):
            group, known = entry[1], named[i].group_size
            named[i] = dataclasses.replace(named[i], process_group=group, group_size=sizes.get(group, known))
    for i, call in enumerate(named):
        if call.process_group is None and call.op != "send_recv":
            of_size = [g for g in rank.groups if call.group_size in (None, len(g.ranks))]
            if len(of_size) == 1:
                named[i] = dataclasses.replace(call, process_group=of_size[0].name, group_size=len(of_size[0].ranks))
    return dataclasses.replace(rank, collectives=tuple(named))


def _elements(call: Collective) -> int | None:
    size = rules.dtype_size(call.dtype)
    return call.nbytes // size if call.nbytes is not None and size else None


def _alignment(starts: list[float], created: list[float]) -> int | None:
    """The latest offset k at which created[k + i] is at most starts[i] (within TOLERANCE_US) for every i; None
    where there is none (more calls traced than recorded, or the record of another run)."""
    for k in range(len(created) - len(starts), -1, -1):
        if all(c <= s + TOLERANCE_US for c, s in zip(created[k:], starts, strict=False)):
            return k
    return None
