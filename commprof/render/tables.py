"""Rows shared by every renderer: the same columns in the terminal, Markdown and HTML."""

from __future__ import annotations

import re

from commprof.kinds import KINDS
from commprof.render.groups_view import costliest_dimension, over
from commprof.results.common import PRACTICAL_SHARE, WARN_SLOWDOWN, signed
from commprof.results.report import (
    BucketEvent,
    CollectiveStats,
    RankSummary,
    Report,
    SettingResult,
    SweepResult,
)
from commprof.values import human_bytes

# The step is the mean over profiled steps, as every part is: compute + exposed + copies + idle = step, exactly;
# comm = overlap + exposed. The median and p95 step stand beside it, named.
BREAKDOWN_HEADERS = (
    "rank",
    "mean step ms",
    "median",
    "p95",
    "compute",
    "comm",
    "overlap",
    "exposed",
    "copies",
    "idle",
    "ratio",
)
BREAKDOWN_SUM = "means per step: compute + exposed + copies + idle = mean step; comm = overlap + exposed"
COLLECTIVE_HEADERS = (
    "phase",
    "op",
    "for",
    "over",
    "backend",
    "dtype",
    "ranks",
    "calls/step",
    "bytes/call",
    "ms",
    "hidden",
    "algbw",
    "busbw",
)


def _ms_pct(value: float, step: float) -> str:
    return f"{value:.1f} {100 * value / step:.0f}%" if step > 0 else f"{value:.1f}"


def breakdown_row(r: RankSummary, label: str | None = None) -> tuple[str, ...]:
    step = r.step_time_ms.mean
    ratio = f"{r.comm_compute_ratio:.2f}" if r.comm_compute_ratio is not None else "-"
    return (
        label or str(r.rank),
        f"{step:.1f}",
        f"{r.step_time_ms.median:.1f}",
        f"{r.step_time_ms.p95:.1f}",
        _ms_pct(r.compute_ms, step),
        _ms_pct(r.comm_ms, step),
        _ms_pct(r.overlap_ms, step),
        _ms_pct(r.exposed_comm_ms, step),
        _ms_pct(r.memory_only_ms, step),
        _ms_pct(r.idle_ms, step),
        ratio,
    )


# Beyond this many ranks, tables show the distribution over ranks and the top ranks instead of
# one row per rank; report.json always has every rank.
MAX_RANK_ROWS = 16
TOP_RANKS = 5
QUANTILES = (("min", 0.0), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))


def many_ranks(report: Report) -> bool:
    return len(report.ranks) > MAX_RANK_ROWS


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def step_clock(report: Report) -> str:
    """What 'step' means in this report, in words: the clock every figure of the breakdown is on."""
    kinds = {r.kind for r in report.ranks}
    if kinds == {"gpu"}:
        return (
            "GPU time: a step spans the device work it launched (kernels, memcpy, memset), first to last, and "
            "work carried over from before it that ran in between steps; run.json's step times are wall-clock"
        )
    if kinds == {"cpu"}:
        return "CPU time: a step is its ProfilerStep range"
    return "GPU time on GPU ranks, CPU time on the others"


def breakdown_notes(report: Report) -> list[str]:
    """The sentences under the breakdown table: peak memory, the profiler's cost, carried-over work."""
    return [line for line in (peak_memory(report), profiler_cost(report), carried_over(report)) if line]


def carried_over(report: Report) -> str | None:
    """Device work still running from before each step, when there is any worth saying (0.05 ms or more)."""
    ranks = [r for r in report.ranks if r.carried_over_ms >= 0.05]
    if not ranks:
        return None
    worst = max(ranks, key=lambda r: r.carried_over_ms)
    return (
        f"Device work carried over from before the step runs inside it on {len(ranks)} rank(s), up to "
        f"{worst.carried_over_ms:.2f} ms per step (rank {worst.rank}): counted where it runs"
    )


def peak_memory(report: Report) -> str | None:
    """Peak GPU memory per rank (allocated / reserved by PyTorch's allocator), or on CPU the peak resident set of
    each rank's process, when the run recorded it."""
    peaks = report.run.peak_gpu_memory_mb if report.run else {}
    rss = report.run.peak_rss_mb if report.run else {}
    if not peaks and rss:
        return "Peak memory (process resident set): " + ", ".join(
            f"rank {rank} {mb:.0f} MiB" for rank, mb in sorted(rss.items(), key=lambda kv: int(kv[0]))
        )
    if not peaks:
        return None
    return "Peak GPU memory (allocated / reserved): " + ", ".join(
        f"rank {rank} {p['allocated'] / 1024:.2f} / {p['reserved'] / 1024:.2f} GiB"
        for rank, p in sorted(peaks.items(), key=lambda kv: int(kv[0]))
    )


def profiler_cost(report: Report) -> str | None:
    """The profiler's own cost in this run: profiled steps against unprofiled ones (wall clock)."""
    job = report.job_step
    if job is None:
        return None
    slowed = "; the breakdown describes these slowed steps" if job.slowdown > WARN_SLOWDOWN else ""
    return (
        f"Profiler's own cost: the profiled steps took {job.profiled_ms:.1f} ms against {job.unprofiled_ms:.1f} ms "
        f"outside its window ({signed(job.slowdown, '.0%')}; medians of the slowest rank's time per step, wall "
        f"clock){slowed}"
    )


def breakdown_rows(report: Report) -> list[tuple[str, ...]]:
    """One row per rank; or, for many ranks, each column's quantiles over ranks, then the slowest ranks."""
    ranks = report.ranks
    if not many_ranks(report):
        return [breakdown_row(r) for r in ranks]
    rows = []
    for name, q in QUANTILES:

        def pick(attr: str, q: float = q) -> float:
            return quantile([getattr(r, attr) for r in ranks], q)

        step = {k: quantile([getattr(r.step_time_ms, k) for r in ranks], q) for k in ("median", "p95", "mean")}
        ratios = [r.comm_compute_ratio for r in ranks if r.comm_compute_ratio is not None]
        ratio = f"{quantile(ratios, q):.2f}" if ratios else "-"
        rows.append(
            (
                f"{name} of {len(ranks)}",
                f"{step['mean']:.1f}",
                f"{step['median']:.1f}",
                f"{step['p95']:.1f}",
                *(
                    _ms_pct(pick(a), step["mean"])
                    for a in ("compute_ms", "comm_ms", "overlap_ms", "exposed_comm_ms", "memory_only_ms", "idle_ms")
                ),
                ratio,
            )
        )
    slowest = sorted(ranks, key=lambda r: r.step_time_ms.median, reverse=True)[:TOP_RANKS]
    return rows + [breakdown_row(r, f"rank {r.rank} (slowest #{i + 1})") for i, r in enumerate(slowest)]


def _num(value: float | None, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


PHASE_HEADERS = ("phase", "ms", "compute", "comm", "hidden", "exposed")
PHASE_NOTE = (
    "Per phase of the step (mean over every rank's steps, ms), by what ran: forward, each micro-step's forward; "
    "backward, each backward pass from its first backward op (the last one up to Optimizer.step); optimizer, from "
    "Optimizer.step; under gradient accumulation the rows say how many micro-steps make a step; hidden: "
    "communication under computation"
)


def phase_rows(report: Report) -> list[tuple[str, ...]]:
    micro = report.micro_steps or 1
    return [
        (
            f"{p.phase} ({micro} micro-steps)" if micro > 1 and p.phase != "optimizer" else p.phase,
            f"{p.window_ms:.1f}",
            f"{p.compute_ms:.1f}",
            f"{p.comm_ms:.1f}",
            f"{p.overlap_ms:.1f}",
            f"{p.exposed_comm_ms:.1f}",
        )
        for p in report.phases
    ]


GATHER_HEADERS = ("module", "phase", "calls/step", "ms/step", "exposed ms/step")
GATHER_NOTE = (
    "FSDP's parameter all-gathers by module, most exposed first: exposed is what no computation hid, the "
    "time the block waited for its parameters (first 64 ranks)"
)
TOP_GATHERS = 10


def gather_rows(report: Report) -> list[tuple[str, ...]]:
    return [
        (g.module, g.phase or "-", f"{g.calls_per_step:.2f}", f"{g.ms:.2f}", f"{g.exposed_ms:.2f}")
        for g in report.gathers[:TOP_GATHERS]
    ]


def without_empty_columns(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> tuple[tuple[str, ...], list]:
    """The columns where some row says something (not "-"): a terminal has no width to spare."""
    keep = [i for i in range(len(headers)) if any(row[i] != "-" for row in rows)]
    return tuple(headers[i] for i in keep), [tuple(row[i] for i in keep) for row in rows]


def collective_row(c: CollectiveStats, several: bool = False) -> tuple[str, ...]:
    """`several`: the job's collectives ran over several dimensions (or groups), each row names its own."""
    return (
        c.phase or "-",
        c.op,
        c.purpose or "-",
        over(c.group, c.group_ranks) if several else "-",
        c.backend,
        c.dtype or "unknown",
        str(c.group_size or "unknown"),
        f"{c.calls_per_step:.2f}",
        human_bytes(c.bytes),
        f"{c.mean_ms:.3f}",
        "-" if c.hidden_pct is None else f"{c.hidden_pct:.0f}%",
        _num(c.algbw_gbps),
        _num(c.busbw_gbps),
    )


def headline(report: Report) -> str:
    """One sentence about the rank with the most exposed communication; in a sweep's report, of its best setting's
    profiled launch, which the breakdown below describes."""
    worst = max(report.ranks, key=lambda r: r.exposed_fraction)
    step = worst.step_time_ms.mean or 1.0
    hidden = 100 * worst.overlap_ms / worst.comm_ms if worst.comm_ms else 0.0
    subject = f"In {report.sweep.best}'s profiled launch, " if report.sweep is not None else ""
    text = (
        f"{subject}{100 * worst.exposed_fraction:.0f}% of the step is exposed communication on rank {worst.rank}; "
        f"communication takes {100 * worst.comm_ms / step:.0f}% of the step, {hidden:.0f}% of it hidden "
        "behind computation"
    ) + costliest_dimension(report)
    changed = _changed(report)
    if changed:
        return changed + text
    job = report.job_step
    if job is None:
        return text
    slowed = job.slowdown > WARN_SLOWDOWN
    return (
        f"The job's step takes {job.unprofiled_ms:.1f} ms without the profiler (median of its unprofiled steps, "
        "slowest rank)"
        + (f". The profiler slowed the steps it recorded by {job.slowdown:.0%}; in them, " if slowed else "; ")
        + text
    )


def _changed(report: Report) -> str:
    """Where the run changed, its stretches apart, and the stretch the profiled steps are from: never one figure of a
    run that changed, nor the window's shares beside another stretch's step."""
    whole = report.whole_run
    if whole is None or not whole.changes:
        return ""
    window = whole.window
    if len(whole.stretches) > 1:
        steps = ", ".join(f"{s.step_ms:.1f}" for s in whole.stretches)
        said = f"The job went through {len(whole.stretches)} stretches, its step {steps} ms (slowest rank; below); "
    else:
        change = whole.changes[0]
        said = (
            f"The job's communication alone changed at step {change.step}, the collectives' own time from "
            f"{change.transfer_ms_before:.1f} to {change.transfer_ms_after:.1f} ms a step (below); "
        )
    if window is None:
        return said
    steps = f"steps {window.first_step}-{window.last_step}"
    stretch = whole.stretch_of(window.first_step, window.last_step)
    if stretch is not None:
        return said + f"the profiled {steps} lie in steps {stretch.first_step}-{stretch.last_step}, in which "
    held = next((c.step for c in whole.changes if window.first_step < c.step <= window.last_step), None)
    if held is not None:
        return said + f"the profiled {steps} span its change at step {held}, in which "
    side = "before" if window.last_step < whole.changes[0].step else "after"
    return said + f"the profiled {steps} are from {side} it, in which "


TIMELINE_HEADERS = ("bucket", "size", "ready ms", "all-reduce start", "end", "took ms")
DDP_CHECK_HEADERS = ("setting", "backward compute ms (DDP / trace)", "backward comm ms", "overlap ms")


NOT_SIGNIFICANT = f"~: its CI contains 1, or it changes the step by under {PRACTICAL_SHARE:.0%}"


def sweep_table(sweep: SweepResult) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Headers and a row per setting: DDP's with its buckets and all-reduces per step, FSDP's with its parameter
    all-gathers per step, DeepSpeed's with its all-reduces (ZeRO's buckets are not recorded)."""
    kind = KINDS[sweep.strategy]
    fsdp, ddp = kind.gathers, kind.reads_ddp
    by_launch = any(s.launches for s in sweep.settings)  # a script's: its timed launches
    headers = (
        "setting",
        *(("buckets",) if ddp else ()),
        "step ms",
        "95% CI",
        "speedup",
        *(("launches",) if by_launch else ()),
        "exposed",
        "overlap",
        "gathers/step" if fsdp else "AR/step",
    )
    twin = {
        s.label: next((t.label for t in sweep.settings[:i] if s.same_buckets(t)), None)
        for i, s in enumerate(sweep.settings)
    }
    rows = [
        (
            s.label + (" *" if s.best else "") + (f" (= {twin[s.label]})" if twin[s.label] else ""),
            *((str(s.buckets),) if ddp else ()),
            f"{s.step_ms.value:.1f}",
            f"{s.step_ms.low:.0f}-{s.step_ms.high:.0f}",
            f"{s.speedup.value:.2f}x" + ("" if s.significant else "~"),
            *((str(s.launches),) if by_launch else ()),
            f"{s.exposed_comm_ms:.1f}",
            f"{s.overlap_pct:.0f}%",
            f"{s.gathers_per_step if fsdp else s.allreduce_calls_per_step:.1f}",
        )
        for s in sweep.settings
    ]
    return headers, rows


def timeline_row(b: BucketEvent) -> tuple[str, ...]:
    return (
        str(b.index),
        human_bytes(b.bytes),
        f"{b.ready_ms:.2f}",
        f"{b.start_ms:.2f}",
        f"{b.end_ms:.2f}",
        f"{b.end_ms - b.start_ms:.2f}",
    )


def ddp_check_row(s: SettingResult) -> tuple[str, ...]:
    c = s.ddp_check
    if c is None:
        return (s.label, "-", "-", "-")
    return (
        s.label,
        f"{_num(c.ddp_backward_compute_ms, '.1f')} / {_num(c.trace_backward_compute_ms, '.1f')}",
        f"{_num(c.ddp_backward_comm_ms, '.1f')} / {_num(c.trace_backward_comm_ms, '.1f')}",
        f"{_num(c.ddp_overlap_ms, '.1f')} / {_num(c.trace_overlap_ms, '.1f')}",
    )


def busbw_by_size(busbw: dict[str, float | None]) -> str:
    """'4.0 MiB: 0.26, 28.1 MiB: 0.83' from {bytes: GB/s}."""
    return ", ".join(f"{int(size) / 2**20:.1f} MiB: {bw:.2f}" for size, bw in busbw.items() if bw)


_PROFILER_STEP = re.compile(r"ProfilerStep#(\d+)")


def step_named(report: Report, name: str) -> str:
    """A trace's step range as a person counts steps: 'step 17 (ProfilerStep#16 in the trace)' in commprof's runs,
    where the first profiled range is the schedule's first recorded optimizer step; the name alone elsewhere (traces
    from elsewhere, a sweep's launches)."""
    first = min((int(m.group(1)) for s in report.steps if (m := _PROFILER_STEP.fullmatch(s.step))), default=None)
    named = _PROFILER_STEP.fullmatch(name)
    if report.run is None or report.sweep is not None or first is None or named is None:
        return name  # a sweep's profiled launches keep a schedule of their own
    return f"step {report.run.config.schedule.step_of(int(named.group(1)), first)} ({name} in the trace)"
