"""What each collective is for and when in its step it was launched. The phase (forward, backward, optimizer)
comes from the CPU launch time: inside an Optimizer.step range, after the step's first backward op, or
before it. FSDP's purpose and module come from the innermost FSDP2 range that names one (rules.FSDP_PURPOSE),
open around the launch on the launching thread."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Any

from commprof.trace import rules
from commprof.trace.events import Event
from commprof.trace.model import Step
from commprof.trace.partition import Partition


class Roles:
    def __init__(self, events: Partition, cpu_steps: list[Step], backward_starts: tuple[float | None, ...]):
        self._steps, self._backward = cpu_steps, backward_starts
        self._step_starts = [s.start for s in cpu_steps]
        self._optimizer = sorted((e.ts, e.ts + e.dur) for e in events.optimizer_steps)
        self._fsdp: dict[Any, list[Event]] = defaultdict(list)
        for event in sorted(events.fsdp_ranges, key=lambda e: e.ts):
            self._fsdp[(event.pid, event.tid)].append(event)
        self._fsdp_starts = {thread: [e.ts for e in ranges] for thread, ranges in self._fsdp.items()}

    def of(self, launch: Event | None, op: str) -> dict[str, str | None]:
        """phase, purpose and module of a collective launched by `launch` (a CPU op or runtime call), whose op,
        as its launch names it, is `op`."""
        if launch is None:
            return {}
        purpose, module = self._fsdp_purpose(launch, op)
        return {"phase": self.phase(launch.ts), "purpose": purpose, "module": module}

    def phase(self, ts: float) -> str | None:
        i = bisect_right(self._optimizer, (ts, float("inf"))) - 1
        if i >= 0 and self._optimizer[i][0] <= ts <= self._optimizer[i][1]:
            return "optimizer"
        i = bisect_right(self._step_starts, ts) - 1
        if i < 0 or ts > self._steps[i].end:
            return None
        backward = self._backward[i] if i < len(self._backward) else None
        return "backward" if backward is not None and ts >= backward else "forward"

    def _fsdp_purpose(self, launch: Event, op: str) -> tuple[str | None, str | None]:
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
