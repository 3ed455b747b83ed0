"""PNG plots (matplotlib, no display needed): each takes parts of a Report."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from commprof.analysis.report import SettingResult, SweepResult  # noqa: E402


def sweep_plot(sweep: SweepResult, path: Path) -> Path:
    """Step time (median, 95% CI) and exposed communication against bucket size, log axis."""
    settings = sorted(sweep.settings, key=lambda s: s.bucket_cap_mb)
    by_size = len({s.bucket_cap_mb for s in settings}) == len(settings)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    x = [s.bucket_cap_mb for s in settings] if by_size else list(range(len(settings)))
    step = [s.step_ms.value for s in settings]
    errors = [[s.step_ms.value - s.step_ms.low for s in settings], [s.step_ms.high - s.step_ms.value for s in settings]]
    ax.errorbar(x, step, yerr=errors, marker="o", capsize=4, label="step time (median, 95% CI)")
    ax.plot(x, [s.exposed_comm_ms for s in settings], marker="s", linestyle="--", label="exposed communication")
    best = next(s for s in settings if s.best)
    ax.scatter([x[settings.index(best)]], [best.step_ms.value], s=160, facecolors="none", edgecolors="red",
               zorder=5, label=f"best: {best.label}")
    if by_size:
        ax.set_xscale("log")
        ax.set_xlabel("bucket_cap_mb")
        ax.set_xticks(x, [f"{v:g}" for v in x])
    else:
        ax.set_xticks(x, [s.label for s in settings], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("ms per step")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{sweep.kind}: step time against DDP setting")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def bucket_timeline_plot(setting: SettingResult, path: Path) -> Path:
    """One backward pass: when each bucket became ready and when its all-reduce ran."""
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(setting.timeline) + 1.6), dpi=110)
    for bucket in setting.timeline:
        ax.barh(bucket.index, bucket.end_ms - bucket.start_ms, left=bucket.start_ms, color="tab:orange", height=0.6)
        ax.plot([bucket.ready_ms], [bucket.index], marker="|", color="black", markersize=14)
        size = f"{bucket.bytes / 2**20:.1f} MiB" if bucket.bytes else "?"
        ax.text(bucket.end_ms, bucket.index, f"  {size}", va="center", fontsize=8)
    ax.set_yticks([b.index for b in setting.timeline], [f"bucket {b.index}" for b in setting.timeline])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the backward pass began (| = bucket ready, bar = all-reduce)")
    ax.set_title(f"{setting.label}: gradient buckets in one backward pass")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
