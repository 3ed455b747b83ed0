"""What each collective is for and when in its step it was launched. The phase (forward, backward, optimizer)
comes from the CPU launch time and the step's phase bounds (phase_bounds, which the breakdown by phase
shares): from the step's first Optimizer.step on, from its first backward op on, or before that. FSDP's purpose
and module come from the innermost FSDP2 range that names one (rules.FSDP_PURPOSE), open around the launch on the
launching thread."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import TypedDict

from commprof.trace import rules
from commprof.trace.events import CompleteEvent, Thread
from commprof.trace.model import Step
from commprof.trace.partition import Partition


def phase_bounds(step: Step, backward: float | None, optimizer: float | None) -> tuple[float | None, float | None]:
    """Where the step's backward and optimizer phases begin, inside the step: the first backward op, and the
    first Optimizer.step (never before the backward). None: the trace marks no such phase in the step."""

    def inside(t: float | None) -> float | None:
        return None if t is None else min(max(t, step.start), step.end)

    backward, optimizer = inside(backward), inside(optimizer)
    if backward is not None and optimizer is not None:
        optimizer = max(backward, optimizer)
    return backward, optimizer


class CollectiveRoles(TypedDict, total=False):
    """What Roles.of finds about a collective: Collective's fields of the same names (none when it knows no launch)."""

    phase: str | None
    purpose: str | None
    module: str | None


class Roles:
    def __init__(
        self,
        events: Partition,
        cpu_steps: list[Step],
        backward_starts: tuple[float | None, ...],
        optimizer_starts: tuple[float | None, ...],
    ):
        self._steps, self._backward, self._optimizer = cpu_steps, backward_starts, optimizer_starts
        self._step_starts = [s.start for s in cpu_steps]
        self._fsdp: dict[Thread, list[CompleteEvent]] = defaultdict(list)
        for event in sorted(events.fsdp_ranges, key=lambda e: e.ts):
            self._fsdp[(event.pid, event.tid)].append(event)
        self._fsdp_starts = {thread: [e.ts for e in ranges] for thread, ranges in self._fsdp.items()}

    def of(self, launch: CompleteEvent | None, op: str | None) -> CollectiveRoles:
        """phase, purpose and module of a collective launched by `launch` (a CPU op or runtime call), whose op,
        as its launch names it, is `op`."""
        if launch is None:
            return {}
        purpose, module = self._fsdp_purpose(launch, op)
        return {"phase": self.phase(launch.ts), "purpose": purpose, "module": module}

    def phase(self, ts: float) -> str | None:
        """The phase of the step (phase_bounds) that `ts` falls in; None outside every step."""
        i = bisect_right(self._step_starts, ts) - 1
        if i < 0 or ts > self._steps[i].end:
            return None
        backward, optimizer = phase_bounds(self._steps[i], self._backward[i], self._optimizer[i])
        if optimizer is not None and ts >= optimizer:
            return "optimizer"
        return "backward" if backward is not None and ts >= backward else "forward"

    def _fsdp_purpose(self, launch: CompleteEvent, op: str | None) -> tuple[str | None, str | None]:
        thread = (launch.pid, launch.tid)
        ranges = self._fsdp.get(thread)
        if not ranges:
            return None, None
        step = bisect_right(self._step_starts, launch.ts) - 1
        since = self._step_starts[step] if step >= 0 else float("-inf")  # ranges of earlier steps are closed
        for i in range(bisect_right(self._fsdp_starts[thread], launch.ts) - 1, -1, -1):
            event = ranges[i]
            if event.ts < since:
                break
            match = rules.FSDP_RANGE.match(event.name)
            if event.ts + event.dur < launch.ts or match is None or match["doing"] not in rules.FSDP_PURPOSE:
                continue
            purpose = rules.FSDP_PURPOSE[match["doing"]]
            if match["doing"] == "post_backward_reduce" and op == "all_reduce":
                purpose = rules.REPLICATE_ALL_REDUCE
            return purpose, match["module"] or "root"
        return None, None
