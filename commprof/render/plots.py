"""PNG plots (matplotlib's Agg renderer, no display): `figures(report)` gives every plot the report supports.
Figures are made directly, without pyplot: no global figure state, and a third less to import."""

from __future__ import annotations

import io

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from commprof.render.tables import QUANTILES, TOP_RANKS, many_ranks, step_named
from commprof.results.bench import BenchResult
from commprof.results.compare import BackendRun
from commprof.results.report import Report, SettingResult, StepTimeline, SweepResult
from commprof.results.whole_run import WholeRun

COLORS = {
    "compute": "#4C72B0",
    "overlap": "#8172B2",
    "exposed": "#DD8452",
    "idle": "#C8C8C8",
    "comm": "#DD8452",
    "memory": "#55A868",
}


def subplots(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    fig = Figure(figsize=figsize, dpi=110)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")  # "tight": the legend beside the axes is kept
    return buffer.getvalue()


def legend_beside(ax: Axes, **options) -> None:
    """The legend to the right of the axes, never over the data."""
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), **options)


def breakdown_plot(report: Report) -> bytes:
    """Stacked bars per rank: computation only, overlapped, exposed communication, idle (ms per step).
    For many ranks: the ranks at the step-time quantiles and the slowest ones."""
    ranks, labels = representative_ranks(report)
    fig, ax = subplots((9, 0.35 * len(ranks) + 1.6))
    parts = [
        ("computation only", [r.compute_ms - r.overlap_ms for r in ranks], COLORS["compute"]),
        ("computation + communication", [r.overlap_ms for r in ranks], COLORS["overlap"]),
        ("exposed communication", [r.exposed_comm_ms for r in ranks], COLORS["exposed"]),
        ("memcpy / memset only", [r.memory_only_ms for r in ranks], COLORS["memory"]),
        ("idle", [r.idle_ms for r in ranks], COLORS["idle"]),
    ]
    left = [0.0] * len(ranks)
    for name, values, color in parts:
        ax.barh(labels, values, left=left, color=color, label=name)
        left = [a + b for a, b in zip(left, values, strict=False)]
    ax.invert_yaxis()
    ax.set_xlabel("ms per step (mean over profiled steps)")
    legend_beside(ax)
    ax.set_title("Where the step goes, per rank")
    fig.tight_layout()
    return png_bytes(fig)


def representative_ranks(report: Report) -> tuple[list, list[str]]:
    if not many_ranks(report):
        return report.ranks, [f"rank {r.rank}" for r in report.ranks]
    ordered = sorted(report.ranks, key=lambda r: r.step_time_ms.median)
    chosen: dict[int, str] = {}
    for name, q in QUANTILES:
        rank = ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
        chosen.setdefault(rank.rank, f"rank {rank.rank} ({name})")
    for i, rank in enumerate(ordered[::-1][:TOP_RANKS]):
        chosen.setdefault(rank.rank, f"rank {rank.rank} (slowest #{i + 1})")
    picked = [r for r in ordered if r.rank in chosen]
    return picked, [chosen[r.rank] for r in picked]


def step_timeline_plot(timeline: StepTimeline, step: str) -> bytes:
    """One step of one rank: computation and communication as two lanes."""
    fig, ax = subplots((8, 2.2))
    for lane, (_name, intervals, color) in enumerate(
        (
            ("computation", timeline.compute, COLORS["compute"]),
            ("communication", timeline.communication, COLORS["comm"]),
        )
    ):
        ax.broken_barh([(a, b - a) for a, b in intervals], (lane - 0.35, 0.7), color=color)
    ax.set_yticks([0, 1], ["computation", "communication"])
    ax.set_xlim(0, timeline.window_ms)
    ax.invert_yaxis()
    ax.set_xlabel("ms from the start of the step")
    ax.set_title(f"rank {timeline.rank}, {step} (a step of median length)")
    fig.tight_layout()
    return png_bytes(fig)


def sweep_plot(sweep: SweepResult) -> bytes:
    """Step time (median, 95% CI) and exposed communication against the setting, log axis for sizes."""
    # a script's own setting (no bucket_cap_mb applied: None) first, on an axis of labels
    settings = sorted(sweep.settings, key=lambda s: (s.options.get("bucket_cap_mb") or 0, s.label))
    sizes = [s.options["bucket_cap_mb"] for s in settings if s.options.get("bucket_cap_mb") is not None]
    by_size = len(sizes) == len(settings) and len(set(sizes)) == len(settings)
    fig, ax = subplots((7, 4))
    x: list[float] = sizes if by_size else list(range(len(settings)))
    errors = [[s.step_ms.value - s.step_ms.low for s in settings], [s.step_ms.high - s.step_ms.value for s in settings]]
    ax.errorbar(
        x, [s.step_ms.value for s in settings], yerr=errors, marker="o", capsize=4, label="step time (median, 95% CI)"
    )
    ax.plot(
        x,
        [s.exposed_comm_ms for s in settings],
        marker="s",
        linestyle="--",
        color=COLORS["exposed"],
        label="exposed communication",
    )
    best = next(s for s in settings if s.best)
    ax.scatter(
        [x[settings.index(best)]],
        [best.step_ms.value],
        s=160,
        facecolors="none",
        edgecolors="red",
        zorder=5,
        label=f"best: {best.label}",
    )
    if by_size:
        ax.set_xscale("log")
        ax.set_xlabel("bucket_cap_mb")
        ax.set_xticks(x, [f"{v:g}" for v in x])
    else:
        ax.set_xticks(x, [s.label for s in settings], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("ms per step")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    legend_beside(ax)
    ax.set_title(f"{sweep.kind}: step time against {sweep.strategy.upper()} setting")
    fig.tight_layout()
    return png_bytes(fig)


def bucket_timeline_plot(setting: SettingResult) -> bytes:
    """One backward pass: when each bucket became ready and when its all-reduce ran."""
    fig, ax = subplots((7, 0.4 * len(setting.timeline) + 1.6))
    for bucket in setting.timeline:
        ax.barh(bucket.index, bucket.end_ms - bucket.start_ms, left=bucket.start_ms, color=COLORS["comm"], height=0.6)
        ax.plot([bucket.ready_ms], [bucket.index], marker="|", color="black", markersize=14)
        size = f"{bucket.bytes / 2**20:.1f} MiB" if bucket.bytes else "?"
        ax.text(bucket.end_ms, bucket.index, f"  {size}", va="center", fontsize=8)
    ax.set_yticks([b.index for b in setting.timeline], [f"bucket {b.index}" for b in setting.timeline])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the backward pass began (| = bucket ready, bar = all-reduce)")
    ax.set_title(f"{setting.label}: gradient buckets in one backward pass")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return png_bytes(fig)


def whole_run_figure(whole: WholeRun) -> Figure:
    """Every step of the run: the slowest rank's step time (block means when the record merged steps, each block's
    slowest step faint), the time with a collective in flight, the stand-out threshold, each stretch's median step
    where it went through several, a change of communication alone, the profiled window shaded, the listed stand-out
    steps crossed."""
    fig, ax = subplots((9, 4))
    points = whole.series
    x = [p.first_step for p in points]
    ax.plot(x, [p.step_ms for p in points], color=COLORS["compute"], linewidth=1.2, label="step time (slowest rank)")
    if whole.block_steps > 1:
        ax.plot(
            x,
            [p.step_ms_max for p in points],
            color=COLORS["compute"],
            alpha=0.35,
            linewidth=0.8,
            marker=".",
            markersize=3,
            label="slowest step of the block",
        )
    if whole.timed_by:
        ax.plot(x, [p.comm_ms for p in points], color=COLORS["comm"], linewidth=1.2, label="collective in flight")
    stands_out = f"stands out: > {whole.threshold_ms:.1f} ms"
    ax.axhline(whole.threshold_ms, color="gray", linestyle="--", linewidth=1, label=stands_out)
    if len(whole.stretches) > 1:
        for i, stretch in enumerate(whole.stretches):
            label = "stretch's median step" if i == 0 else "_"  # matplotlib leaves "_" names out of the legend
            ax.hlines(stretch.step_ms, stretch.first_step, stretch.last_step, color="black", linewidth=2, label=label)
    for i, change in enumerate(c for c in whole.changes if c.kind == "communication"):
        ax.axvline(
            change.step, color=COLORS["comm"], linestyle=":", label="communication alone changed" if not i else None
        )
    if whole.window is not None:  # half a step either side: a window of one step is seen too
        ax.axvspan(
            whole.window.first_step - 0.5,
            whole.window.last_step + 0.5,
            color=COLORS["memory"],
            alpha=0.2,
            label="profiled window",
        )
    if whole.standouts:
        ax.plot(
            [s.step for s in whole.standouts],
            [s.step_ms for s in whole.standouts],
            linestyle="none",
            marker="x",
            markersize=8,
            color="red",
            label="stood out (listed)",
        )
        for s in whole.standouts:
            ax.annotate(str(s.step), (s.step, s.step_ms), xytext=(4, 4), textcoords="offset points", fontsize=7)
    blocks = f" (mean of {whole.block_steps}-step blocks)" if whole.block_steps > 1 else ""
    ax.set_xlabel(f"step{blocks}")
    ax.set_ylabel("ms")
    _start_up_off_scale(ax, whole)
    ax.grid(alpha=0.3)
    legend_beside(ax)
    ranks = len(whole.ranks)
    ax.set_title(f"Every step of the run, {ranks} rank{'' if ranks == 1 else 's'}")
    fig.tight_layout()
    return fig


START_UP_STEPS = 3  # the job's start-up: never a stand-out (analysis/whole_run.py)


def _start_up_off_scale(ax, whole: WholeRun) -> None:
    """A start-up step far slower than the rest of the run (the script's imports, the process group) would flatten
    the plot: the axis then ends above the rest, and the start-up's time is written at the top."""
    later = [p.step_ms_max for p in whole.series if p.first_step > START_UP_STEPS]
    early = [p for p in whole.series if p.first_step <= START_UP_STEPS]
    top = 1.15 * max([*later, whole.threshold_ms]) if later else None
    if top is None or not early or max(p.step_ms for p in early) <= top:
        ax.set_ylim(bottom=0)
        return
    ax.set_ylim(0, top)
    first = max(early, key=lambda p: p.step_ms)
    ax.annotate(
        f"step {first.first_step}: {first.step_ms:,.0f} ms (start-up, off the scale)",
        (first.first_step, top),
        xytext=(6, -12),
        textcoords="offset points",
        fontsize=7,
    )


def whole_run_plot(whole: WholeRun) -> bytes:
    return png_bytes(whole_run_figure(whole))


def figures(report: Report) -> dict[str, bytes]:
    """File name -> PNG bytes, for every plot this report has data for."""
    images = {"breakdown.png": breakdown_plot(report)}
    if report.timeline is not None:
        images["timeline.png"] = step_timeline_plot(report.timeline, step_named(report, report.timeline.step))
    if report.sweep is not None:
        images["sweep.png"] = sweep_plot(report.sweep)
        best = next(s for s in report.sweep.settings if s.best)
        if best.timeline:
            images["buckets.png"] = bucket_timeline_plot(best)
    if report.whole_run is not None:
        images["whole_run.png"] = whole_run_plot(report.whole_run)
    return images


def busbw_plot(result: BenchResult) -> bytes:
    """Bus bandwidth against message size (log-log), one line per backend and op; DDP's bucket sizes marked."""
    fig, ax = subplots((8, 4.5))
    for backend, op in sorted({(r.backend, r.op) for r in result.rows}):
        rows = [r for r in result.rows if r.backend == backend and r.op == op]
        ax.plot(
            [r.bytes for r in rows], [r.busbw_gbps for r in rows], marker="o", markersize=3, label=f"{backend} {op}"
        )
    for size in result.ddp_bucket_sizes:
        ax.axvline(size, color="gray", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)" + ("; dotted: DDP bucket sizes" if result.ddp_bucket_sizes else ""))
    ax.set_ylabel("busbw (GB/s)")
    ax.grid(alpha=0.3, which="both")
    legend_beside(ax)
    ax.set_title(f"commprof bench: {result.world_size} ranks")
    fig.tight_layout()
    return png_bytes(fig)


def compare_plot(rows: list[BackendRun]) -> bytes:
    """Step time per backend, split into computation-bound time and exposed communication."""
    fig, ax = subplots((6, 0.5 * max(len(rows), 1) + 1.6))
    names = [r.name for r in rows]
    steps: list[float] = []
    exposed: list[float] = []
    for r in rows:
        assert r.step_ms is not None and r.exposed_comm_ms is not None, "only the runs that ran"
        steps.append(r.step_ms)
        exposed.append(r.exposed_comm_ms)
    ax.barh(
        names,
        [s - e for s, e in zip(steps, exposed, strict=False)],
        color=COLORS["compute"],
        label="rest of the step",
    )
    ax.barh(
        names,
        exposed,
        left=[s - e for s, e in zip(steps, exposed, strict=False)],
        color=COLORS["exposed"],
        label="exposed communication",
    )
    ax.set_xlabel("ms per step (median)")
    legend_beside(ax)
    ax.set_title("Backends on the same workload")
    fig.tight_layout()
    return png_bytes(fig)
