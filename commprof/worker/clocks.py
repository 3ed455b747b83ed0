"""Clock offsets between hosts, measured at start with round trips to rank 0 (as NTP does).

Profiler timestamps are wall-clock (CLOCK_REALTIME) microseconds, so the offsets are measured
on that clock. Ranks on one host share a clock: one rank per host (its local rank 0) is
measured. For each round, rank 0 sends t0, the host leader answers with its time t1, rank 0
reads t2; the round with the shortest trip gives offset = t1 - (t0 + t2) / 2, which is wrong by
at most half the trip (recorded beside it)."""

from __future__ import annotations

import time
from typing import Callable

import torch
import torch.distributed as dist

from commprof.results.run_record import ClockOffset

ROUNDS = 10


def measure_clock_offsets(
    rank: int, host: str, group=None, clock_ns: Callable[[], int] = time.time_ns, rounds: int = ROUNDS
) -> list[ClockOffset]:
    """Every rank calls this (it is collective); rank 0 gets one ClockOffset per host, the others []."""
    hosts: list = [None] * dist.get_world_size(group)
    dist.all_gather_object(hosts, host, group=group)
    leaders: dict[str, int] = {}
    for r, h in enumerate(hosts):
        leaders.setdefault(h, r)
    buffer = torch.zeros(1, dtype=torch.int64)
    offsets = [ClockOffset(hosts[0], 0.0, 0.0)] if rank == 0 else []
    for peer_host, peer in leaders.items():
        if peer == 0:
            continue
        best = (float("inf"), 0.0)
        for _ in range(rounds):
            if rank == 0:
                t0 = clock_ns()
                dist.send(buffer, peer, group=group)
                dist.recv(buffer, peer, group=group)
                t2 = clock_ns()
                best = min(best, ((t2 - t0) / 1e3, (2 * buffer.item() - t0 - t2) / 2e3))  # exact in ints
            elif rank == peer:
                dist.recv(buffer, 0, group=group)
                buffer.fill_(clock_ns())
                dist.send(buffer, 0, group=group)
        if rank == 0:
            offsets.append(ClockOffset(peer_host, best[1], best[0]))
    return offsets
