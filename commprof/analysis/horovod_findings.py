"""The finding for a Horovod run: the fusion threshold whose larger buffers would have run the job's own steps
fastest, replayed on the calls Horovod made (its timeline, merged into rank 0's trace: every step of the run).

Horovod's background thread negotiates what every rank has ready, then runs it one buffer after another, each of at
most HOROVOD_FUSION_THRESHOLD bytes, and only then negotiates again. A larger threshold merges, in order, the buffers
one cycle's tensors were split into (ready at the same time) and nothing else: a buffer it folds into the one before is
a call saved, its bytes still sent. So each training step's saving is what its folded calls took beyond their bytes
at the link's bandwidth (probed, else fitted), as Horovod ran them: on CPU ranks a call there costs from a tenth of a
millisecond to several, the ranks' main threads spinning on the cores its threads need, many times the probe's latency
(measured: docs/semantics.md, "Horovod"). Each step's time is read from the timeline too (from its first
negotiation to the next step's), and the gain is what `commprof advise` measures: the median step less the median of
the steps less their savings, over the steps the profiler did not record (the job as it runs; the profiled ones where
there are none). Its interval is a bootstrap over those steps and the link's probe; the rule that a gain is claimed
only beyond the noise is every finding's. Nothing else is predicted: a longer cycle fuses no more
(measured, ibid.), a smaller threshold would split what the timeline only shows fused, and a GPU run's NCCL calls (in
the trace, not numbered by step) are not replayed: tune measures them."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from commprof.analysis.distortion import untouched
from commprof.analysis.evidence import Evidence
from commprof.analysis.predict import LinkModel, run_link
from commprof.config import ProfileSchedule
from commprof.kinds import HOROVOD
from commprof.results.common import Estimate
from commprof.results.finding_facts import HorovodFusion
from commprof.results.job import BuiltHorovod
from commprof.results.report import Finding
from commprof.settings import HOROVOD_FUSION_GRID_MB, MIB
from commprof.trace.horovod_timeline import PROCESS_GROUP
from commprof.trace.model import Collective, RankTrace

RESAMPLES = 400


BLOCK_STEPS = 5  # the bootstrap draws runs of this many steps: a launch's calls turn slow and fast in runs of steps


@dataclass(frozen=True)
class TrainingStep:
    number: int  # from 0: Horovod's first step of allreduces
    calls: list[Collective]  # rank 0's Horovod allreduces in it, in order
    period_us: float  # from its first negotiation to the next step's: the step's time


def horovod_fusion(evidence: Evidence) -> list[Finding]:
    """The fusion threshold above the run's own that saves the most, among those that fold any call."""
    run, link = evidence.report.run, evidence.link_of(HOROVOD)
    if run is None or link is None:
        return []
    steps, outside = training_steps(evidence.windows[0][0], run.config.schedule if run.config.profiled else None)
    own = run.job.of(BuiltHorovod)[0].fusion_threshold_bytes
    larger = [
        mb * MIB for mb in HOROVOD_FUSION_GRID_MB if mb * MIB > own and any(folded(s.calls, mb * MIB) for s in steps)
    ]
    if not larger:
        return []
    ranks = steps[0].calls[0].group_size or evidence.samples_of(HOROVOD)[0].world_size
    by_size = {limit: gain_ms(steps, limit, link, ranks) for limit in larger}
    best = max(larger, key=lambda limit: (round(by_size[limit], 3), -limit))  # the smaller buffer when equal
    gain = _interval(steps, best, link, evidence, ranks)
    facts = HorovodFusion(
        threshold_bytes=best,
        own_bytes=own,
        calls_now=statistics.median(len(s.calls) for s in steps),
        calls_then=statistics.median(len(s.calls) - len(folded(s.calls, best)) for s in steps),
        exposed_ms=statistics.median(s.exposed_ms for s in evidence.samples_of(HOROVOD)),
        steps=len(steps),
        untouched=outside,
        step_ms=statistics.median(s.period_us for s in steps) / 1000,
        bandwidth_gbps=link.bandwidth_gbps,
        measured=bool(evidence.probe),
    )
    return [Finding(kind=facts.KIND, facts=facts, gain_ms=gain, setting={"fusion_threshold_mb": best / MIB})]


def training_steps(rank: RankTrace, schedule: ProfileSchedule | None = None) -> tuple[list[TrainingStep], bool]:
    """Rank 0's training steps as its Horovod allreduces show them, those the profiler did not touch (where there are
    any: the job as it runs; `schedule`: the run's, where known), else all; and whether they are untouched. The first
    step is left out (Horovod's first negotiations), the last (no next step ends its time), and any whose allreduces
    are not every gradient once (their bytes those of most steps): a metric allreduced in an evaluation loop, a tensor
    allreduced twice in a step, would make steps of their own."""
    by_step: dict[int, list[Collective]] = {}
    first_ready: dict[int, float] = {}
    for call in rank.collectives:
        if call.step is None or call.ready is None or not call.nbytes:
            continue
        if call.op == "all_reduce" and call.process_group == PROCESS_GROUP:
            by_step.setdefault(call.step, []).append(call)
            first_ready[call.step] = min(first_ready.get(call.step, call.ready), call.ready)
    numbers = sorted(by_step)
    steps = [
        TrainingStep(n, by_step[n], first_ready[following] - first_ready[n])
        for n, following in zip(numbers[1:], numbers[2:], strict=False)
    ]
    gradients = statistics.mode(_bytes(s) for s in steps) if steps else 0
    steps = [s for s in steps if _bytes(s) == gradients]
    outside = [s for s in steps if _untouched(s, rank, schedule)]
    return (outside, True) if outside else (steps, False)


def _bytes(step: TrainingStep) -> int:
    return sum(c.nbytes or 0 for c in step.calls)


def _untouched(step: TrainingStep, rank: RankTrace, schedule: ProfileSchedule | None) -> bool:
    """No call of the step inside a profiled step; nor, where the run's schedule is known, its time over a step the
    profiler touched or one of the first few (its calls serve the optimizer step of its index, its time runs into the
    next's)."""
    if any(w.start <= c.start < w.end for c in step.calls for w in rank.steps):
        return False
    return schedule is None or (untouched(schedule, step.number) and untouched(schedule, step.number + 1))


def folded(calls: list[Collective], limit: float) -> list[Collective]:
    """The calls a fusion buffer of `limit` bytes would merge into the one before: those of the same cycle (ready at
    the same time) and dtype (Horovod fuses one dtype in a buffer), in order, while the merged buffer stays within
    `limit`."""
    out: list[Collective] = []
    size, buffer = 0, None
    for call in calls:
        nbytes = call.nbytes or 0
        if buffer is not None and (call.ready, call.dtype) == buffer and size + nbytes <= limit:
            size += nbytes
            out.append(call)
        else:
            size, buffer = nbytes, (call.ready, call.dtype)
    return out


def saving_us(calls: list[Collective], limit: float, link: LinkModel, ranks: int) -> float:
    """What one step's calls folded by a `limit`-byte buffer took beyond their bytes on `link`; a call faster than
    its bytes' time on the link saves nothing (a fold never costs time)."""
    latency = 2 * (ranks - 1) * link.alpha_us
    beyond = (c.end - c.start - (link.allreduce_us(c.nbytes or 0, ranks) - latency) for c in folded(calls, limit))
    return sum(max(0.0, us) for us in beyond)


def gain_ms(steps: list[TrainingStep], limit: float, link: LinkModel, ranks: int) -> float:
    """The median step less the median of the steps each less its saving: what advise measures."""
    then = [s.period_us - saving_us(s.calls, limit, link, ranks) for s in steps]
    return (statistics.median(s.period_us for s in steps) - statistics.median(then)) / 1000


def _interval(steps: list[TrainingStep], limit: float, link: LinkModel, evidence: Evidence, ranks: int) -> Estimate:
    """The gain with a 95% bootstrap interval over the steps, drawn in runs of BLOCK_STEPS (neighbouring steps are
    alike), and, where the run probed its link, the probe's repeats (its bandwidth)."""
    rng = random.Random(0)
    block = min(BLOCK_STEPS, len(steps))
    boots = []
    for _ in range(RESAMPLES):
        drawn_link = run_link(evidence.samples_of(HOROVOD), evidence.probe, rng) if evidence.probe else link
        starts = [rng.randrange(len(steps) - block + 1) for _ in range(-(-len(steps) // block))]
        drawn = [steps[i] for start in starts for i in range(start, start + block)][: len(steps)]
        boots.append(gain_ms(drawn, limit, drawn_link, ranks))
    boots.sort()
    tail = int(0.025 * len(boots))
    return Estimate(gain_ms(steps, limit, link, ranks), boots[tail], boots[-1 - tail])
