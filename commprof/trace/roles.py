"""What each collective is for and when in its step it was launched. The phase (forward, backward, optimizer)
comes from the CPU launch time and the step's phases by what ran (phase_segments, which the breakdown by phase
shares): each backward pass, the forward of each micro-step around them, and the optimizer from the step's first
Optimizer.step on. FSDP's purpose and module come from the innermost FSDP2 range that names one
(rules.FSDP_PURPOSE), open around the launch on the launching thread."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from typing import TypedDict

from commprof.trace import rules
from commprof.trace.events import CompleteEvent, Thread
from commprof.trace.model import Interval, PhaseMarks, Step
from commprof.trace.partition import Partition

Pass = tuple[float, float]  # one backward pass: its first backward op's start, its last one's end


def backward_passes(backward: Sequence[Interval], others: Sequence[float], steps: Sequence[Step]) -> list[list[Pass]]:
    """Per step, its backward passes: the backward ops (`backward`, any thread) that begin in it, one pass for as
    long as no other operator of the training thread begins between them (`others`, sorted: their starts). Under
    gradient accumulation the next micro-step's forward runs between two passes; inside a pass the engine runs
    nothing but backward ops."""
    spans = sorted(backward)
    starts = [start for start, _ in spans]
    result = []
    for step in steps:
        passes: list[Pass] = []
        for start, end in spans[bisect_left(starts, step.start) : bisect_left(starts, step.end)]:
            if passes:
                first, last = passes[-1]
                i = bisect_left(others, last)
                if i == len(others) or others[i] >= start:  # nothing else began since the pass's last op ended
                    passes[-1] = (first, max(last, end))
                    continue
            passes.append((start, end))
        result.append(passes)
    return result


def phase_marks(step: str, passes: Sequence[Pass], optimizer: float | None) -> PhaseMarks:
    """The step's phase changes: each backward pass from its start, the forward after it from its end (but for
    the last), the optimizer from the first Optimizer.step (never before the first backward pass). Passes that
    begin in the optimizer are the optimizer's."""
    if passes and optimizer is not None:
        optimizer = max(optimizer, passes[0][0])
    kept = [p for i, p in enumerate(passes) if i == 0 or optimizer is None or p[0] < optimizer]
    changes: list[tuple[str, float]] = []
    for i, (start, end) in enumerate(kept):
        changes.append(("backward", start))
        if i < len(kept) - 1:
            changes.append(("forward", end))
    if optimizer is not None:
        changes.append(("optimizer", optimizer))
    return PhaseMarks(step, len(kept), tuple(changes))


def last_backward(marks: PhaseMarks) -> float | None:
    """Where the step's last backward pass before the optimizer begins (None: it has none)."""
    return next((t for phase, t in reversed(marks.changes) if phase == "backward"), None)


def phase_segments(step: Step, changes: Sequence[tuple[str, float]]) -> list[tuple[str, float, float]]:
    """The step tiled by phase, in order: forward from its start, then each change's phase from its time (kept
    inside the step, and never before the change before it) to the next change's, the last to the step's end."""
    bounds = [("forward", step.start)]
    for phase, t in changes:
        bounds.append((phase, min(max(t, bounds[-1][1]), step.end)))
    ends = [t for _, t in bounds[1:]] + [step.end]
    return [(phase, start, end) for (phase, start), end in zip(bounds, ends, strict=True)]


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
        marks: Sequence[PhaseMarks],
    ):
        self._steps = cpu_steps
        self._segments = [phase_segments(step, m.changes) for step, m in zip(cpu_steps, marks, strict=True)]
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
        """The phase of the step (phase_segments) that `ts` falls in; None outside every step."""
        i = bisect_right(self._step_starts, ts) - 1
        if i < 0 or ts > self._steps[i].end:
            return None
        segments = self._segments[i]
        return next((phase for phase, start, _ in reversed(segments) if ts >= start), segments[0][0])

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
