"""The report's whole-run section (Report.whole_run) as a person sees it: the same sentences and stand-out rows in the
terminal, report.md and report.html, its plot, and its TensorBoard scalars by training step."""

import dataclasses
import html
import io
import json
import re

import numpy as np
import pytest
from matplotlib.image import imread
from rich.console import Console
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from commprof.render import html as html_page
from commprof.render import markdown as markdown_page
from commprof.render import terminal
from commprof.render.finding_words import with_words
from commprof.render.outputs import write_result
from commprof.render.plots import whole_run_figure
from commprof.render.tensorboard import write_events
from commprof.render.views import view_of
from commprof.render.whole_run_view import STANDOUT_HEADERS, TITLE, standout_row
from commprof.results.report import Report
from commprof.results.store import _build, load_result
from commprof.results.whole_run import StandOut, WholeRun, WholeRunPoint, WindowCheck
from tests.golden_reports import GOLDEN

TIMED_BY = "DDP comm hook, CUDA events"  # worker/step_ledger.CUDA_EVENTS (the worker imports torch)
STANDOUTS = [
    StandOut(
        step=17,
        step_ms=260.4,
        times_median=2.6,
        rank=1,
        busy_ms=251.2,
        collective="all_reduce",
        collective_bytes=29_433_528,
        waited_ms=160.32,
    ),
    StandOut(
        step=30,
        step_ms=170.0,
        times_median=1.7,
        rank=1,
        busy_ms=160.0,
        collective="all_reduce",
        collective_bytes=4 * 2**20,
        waited_ms=70.1,
    ),
    StandOut(step=41, step_ms=158.2, times_median=1.58, rank=0, busy_ms=150.5, collective=None, waited_ms=0.0),
]
SERIES = [
    WholeRunPoint(
        first_step=1 + 2 * i,
        steps=2,
        step_ms=100.0 + i % 5,
        step_ms_max=110.0 + 3 * (i % 4) + (150.0 if i == 8 else 0.0),
        comm_ms=20.0 + i % 3,
    )
    for i in range(24)
]
TYPICAL = WindowCheck(
    first_step=6,
    last_step=9,
    median_ms=101.0,
    standouts=0,
    expected_standouts=0.3,
    typical=True,
    against_ms=100.0,
    run_standouts=3,
    run_steps=48,
)
WHOLE = WholeRun(
    timed_by=TIMED_BY,
    ranks=[0, 1],
    steps=48,
    block_steps=2,
    median_step_ms=100.0,
    median_comm_ms=21.37,
    threshold_ms=150.0,
    standout_count=3,
    standouts=STANDOUTS,
    lost_ms=288.6,
    slow_rank=1,
    slow_rank_steps=2,
    slow_rank_lost_ms=230.4,
    window=TYPICAL,
    series=SERIES,
)


def report_with(whole: WholeRun | None) -> Report:
    """A real 2-rank analysis (the golden report of nccl-sampled-2-of-128), as a run with this whole-run record."""
    data = {**json.loads((GOLDEN / "nccl-sampled-2-of-128.json").read_text()), "created": "now", "sources": ["t"]}
    return dataclasses.replace(_build(Report, data), kind="run", whole_run=whole)


EXAMPLE = report_with(WHOLE)  # also the family's example of a run's report (tests/test_results_family.py)


def screen(report: Report, width: int = 80) -> str:
    """The terminal as the CLI prints it: plain text, sentences wrapped at `width`."""
    buffer = io.StringIO()
    terminal.show(view_of(report).document(report), Console(file=buffer, width=width, force_terminal=False))
    return buffer.getvalue()


def rendered(report: Report) -> dict[str, str]:
    document = view_of(report).document(report)
    return {
        "terminal": screen(report),
        "markdown": markdown_page.render(document),
        "html": html.unescape(html_page.render(document, {})),
    }


def words(text: str) -> str:
    return " ".join(text.split())


def section(text: str) -> str:
    """The whole-run section of a rendering: from its title to the next section's (Collectives)."""
    start = text.index(TITLE)
    return text[start : text.index("Collectives", start)]


@pytest.mark.parametrize("renderer", ["terminal", "markdown", "html"])
def test_every_renderer_shows_the_section(renderer):
    shown = rendered(EXAMPLE)[renderer]
    part = words(section(shown))
    assert (
        "48 steps on 2 ranks; median step 100.0 ms, 21.37 ms of it with a collective in flight; collectives timed by "
        "DDP comm hook, CUDA events." in part
    )
    assert (
        "3 steps stood out (slower than 150.0 ms, 1.5x the median); rank 1 made 2 of them slow: 230 ms of the "
        "289 ms they took beyond the usual step." in part
    )
    assert (
        "The profiled window (steps 6-9) was typical of the run: 0 of its 4 steps stood out, against 3 of the run's "
        "48; its median step 101.0 ms against the run's 100.0 ms." in part
    )
    assert "slowest listed" not in part and "No step stood out" not in part
    rows = [standout_row(s) for s in STANDOUTS]
    assert rows[0] == ("17", "260.4", "2.60x", "1", "251.2", "all_reduce of 28.07 MiB", "160.32")
    assert rows[2] == ("41", "158.2", "1.58x", "0", "150.5", "-", "-")
    for row in rows:
        if renderer == "terminal":  # the row on one line, every cell whole, in the header's order
            assert re.search(r"^" + r"\s+".join(map(re.escape, row)) + r"\s*$", section(shown), re.M), row
        elif renderer == "markdown":
            assert "| " + " | ".join(row) + " |" in shown, row
        else:
            assert "<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" in shown, row
    headers = {"terminal": "  ".join(STANDOUT_HEADERS[:4]), "markdown": " | ".join(STANDOUT_HEADERS)}
    assert headers.get(renderer, "".join(f"<th>{h}</th>" for h in STANDOUT_HEADERS)) in shown


def test_the_terminal_fits_80_columns_and_the_section_sits_after_the_breakdown():
    shown = screen(EXAMPLE)
    assert max(len(line) for line in section(shown).splitlines()) <= 80
    titles = [s.title for s in view_of(EXAMPLE).document(EXAMPLE).sections]
    assert titles.index(TITLE) == titles.index("By phase") + 1
    assert titles.index(TITLE) < titles.index("Collectives") < titles.index("Across ranks")
    assert "figure: whole_run.png (step time over the whole run), in report.html and report.md" in words(section(shown))


def test_the_stand_outs_and_an_untypical_window_are_alerts():
    window = dataclasses.replace(TYPICAL, standouts=2, typical=False, more_standouts=True)
    report = report_with(dataclasses.replace(WHOLE, window=window))
    texts = {t.text: t.style for t in view_of(report).document(report).texts()}
    untypical = (
        "The profiled window (steps 6-9) was not typical of the run: 2 of its 4 steps stood out, against 3 of the "
        "run's 48; its median step 101.0 ms against the run's 100.0 ms."
    )
    assert texts[untypical] == "alert"
    stood_out = (
        "3 steps stood out (slower than 150.0 ms, 1.5x the median); rank 1 made 2 of them slow: 230 ms of the "
        "289 ms they took beyond the usual step."
    )
    assert texts[stood_out] == "alert"
    shown = rendered(report)
    assert f"> **{untypical}**" in shown["markdown"]
    assert f'<p class="incomplete">{untypical}</p>' in shown["html"]
    assert untypical in words(shown["terminal"])
    typical = view_of(EXAMPLE).document(EXAMPLE).texts()
    assert next(t for t in typical if t.text.startswith("The profiled window")).style == "plain"


def test_no_step_stood_out():
    report = report_with(dataclasses.replace(WHOLE, standout_count=0, standouts=[], slow_rank=None, slow_rank_steps=0))
    for shown in rendered(report).values():
        part = words(section(shown))
        assert "No step stood out: none slower than 150.0 ms, 1.5x the median." in part
        assert "stood out (slower" not in part and "others waited in" not in part
    assert not any(t.headers == STANDOUT_HEADERS for t in view_of(report).document(report).tables())


def test_more_stand_outs_than_listed_and_no_slow_rank():
    report = report_with(dataclasses.replace(WHOLE, standout_count=1234, slow_rank=None))
    for shown in rendered(report).values():
        assert "1,234 steps stood out (slower than 150.0 ms, 1.5x the median; the 3 slowest listed)." in words(shown)
        assert "of them slow" not in shown


def test_steps_timed_but_no_collective():
    """No DDP (or FSDP, whose collectives the profiled window has): the steps only, no collective time anywhere."""
    whole = dataclasses.replace(
        WHOLE, timed_by="", median_comm_ms=0.0, series=[dataclasses.replace(p, comm_ms=0.0) for p in SERIES]
    )
    report = report_with(whole)
    for shown in rendered(report).values():
        part = words(section(shown))
        assert (
            "48 steps on 2 ranks; median step 100.0 ms. The steps were timed but no collective was: no "
            "DistributedDataParallel in the run (or FSDP), whose collectives are measured in the profiled window only."
            in part
        )
        assert "collective in flight" not in part and "timed by" not in part
    labels = [line.get_label() for line in whole_run_figure(whole).axes[0].get_lines()]
    assert "collective in flight" not in labels


def test_a_report_without_a_whole_run_record_has_no_section():
    report = report_with(None)
    assert TITLE not in screen(report)
    assert "whole_run.png" not in view_of(report).images(report)


def test_the_plot_draws_every_series():
    figure = whole_run_figure(WHOLE)
    (ax,) = figure.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    steps = [p.first_step for p in SERIES]

    def data(label):
        return list(lines[label].get_xdata()), list(lines[label].get_ydata())

    assert data("step time (slowest rank)") == (steps, [p.step_ms for p in SERIES])
    assert data("slowest step of the block") == (steps, [p.step_ms_max for p in SERIES])
    assert data("collective in flight") == (steps, [p.comm_ms for p in SERIES])
    assert data("stood out (listed)") == ([17, 30, 41], [260.4, 170.0, 158.2])
    assert lines["stood out (listed)"].get_marker() == "x" and lines["stood out (listed)"].get_color() == "red"
    threshold = lines["stands out: > 150.0 ms"]
    assert list(threshold.get_ydata()) == [150.0, 150.0] and threshold.get_linestyle() == "--"
    (window,) = [p for p in ax.patches if p.get_label() == "profiled window"]
    left, right = window.get_extents().transformed(ax.transData.inverted()).intervalx
    assert left <= 6 and right >= 9 and right - left < 5  # steps 6 to 9, half a step either side
    assert ax.get_xlabel() == "step (mean of 2-step blocks)" and ax.get_ylabel() == "ms"
    assert ax.get_legend() is not None


def test_one_step_blocks_have_no_separate_block_maximum():
    whole = dataclasses.replace(WHOLE, block_steps=1, series=[dataclasses.replace(p, steps=1) for p in SERIES])
    (ax,) = whole_run_figure(whole).axes
    assert "slowest step of the block" not in [line.get_label() for line in ax.get_lines()]
    assert ax.get_xlabel() == "step"


def test_the_png_is_drawn_embedded_and_linked():
    images = view_of(EXAMPLE).images(EXAMPLE)
    assert {"breakdown.png", "whole_run.png"} <= images.keys()
    pixels = imread(io.BytesIO(images["whole_run.png"]), format="png")
    assert pixels.shape[0] > 300 and pixels.shape[1] > 600
    assert np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0).shape[0] > 50  # drawn: many colours, not blank
    red = (pixels[..., 0] > 0.9) & (pixels[..., 1] < 0.2) & (pixels[..., 2] < 0.2)
    assert red.sum() > 20  # the stand-out crosses
    document = view_of(EXAMPLE).document(EXAMPLE)
    assert "![step time over the whole run](whole_run.png)" in markdown_page.render(document)
    assert '<img alt="step time over the whole run" src="data:image/png;base64,' in html_page.render(document, images)


def scalars(folder, tag):
    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {event.step: event.value for event in accumulator.Scalars(tag)}


def test_tensorboard_scalars_by_training_step(tmp_path):
    write_events(EXAMPLE, tmp_path)
    run = tmp_path / "whole_run"
    for figure in ("step_ms", "step_ms_max", "comm_ms"):  # at each block's first step
        expected = {p.first_step: getattr(p, figure) for p in SERIES}
        assert scalars(run, f"whole_run/{figure}") == pytest.approx(expected), figure
    assert scalars(run, "whole_run/standout_step_ms") == pytest.approx({17: 260.4, 30: 170.0, 41: 158.2})


def test_tensorboard_without_collectives_or_a_record(tmp_path):
    untimed = report_with(dataclasses.replace(WHOLE, timed_by=""))
    write_events(untimed, tmp_path / "untimed")
    accumulator = EventAccumulator(str(tmp_path / "untimed" / "whole_run"))
    accumulator.Reload()
    assert "whole_run/step_ms" in accumulator.Tags()["scalars"]
    assert "whole_run/comm_ms" not in accumulator.Tags()["scalars"]
    write_events(report_with(None), tmp_path / "none")
    assert not (tmp_path / "none" / "whole_run").exists()


def test_written_with_its_plot_and_loaded_back(tmp_path):
    files = write_result(EXAMPLE, tmp_path)
    assert tmp_path / "whole_run.png" in files and (tmp_path / "tensorboard" / "whole_run").is_dir()
    # report.json holds the findings about ranks with their words beside their facts (render's with_words)
    assert load_result(tmp_path) == with_words(EXAMPLE) and load_result(tmp_path).whole_run == WHOLE
    assert "![step time over the whole run](whole_run.png)" in (tmp_path / "report.md").read_text()


def test_the_rank_that_stalls_every_n_steps_is_said_so():
    report = report_with(dataclasses.replace(WHOLE, slow_rank_every=10))
    assert "rank 1 made 2 of them slow, the largest every 10 steps: 230 ms of the 289 ms" in words(screen(report))


def test_a_start_up_step_off_the_scale_does_not_flatten_the_plot():
    start_up = [dataclasses.replace(SERIES[0], first_step=1, step_ms=5000.0, step_ms_max=5000.0), *SERIES[1:]]
    figure = whole_run_figure(dataclasses.replace(WHOLE, series=start_up))
    (ax,) = figure.axes
    later = max(p.step_ms_max for p in SERIES[1:] if p.first_step > 3)
    assert ax.get_ylim()[1] == pytest.approx(1.15 * max(later, WHOLE.threshold_ms))
    assert any("step 1: 5,000 ms (start-up, off the scale)" == t.get_text() for t in ax.texts)


def test_a_run_over_several_dimensions_says_each_ones_time_in_flight():
    from commprof.render.whole_run_view import summary
    from commprof.results.whole_run import DimensionRun

    dims = [DimensionRun("dp", [[0, 2], [1, 3]], 22.14, 9.0), DimensionRun("tp", [[0, 1], [2, 3]], 16.0, 5.0)]
    said = summary(dataclasses.replace(WHOLE, dimensions=dims, clock_ms=0.25))
    assert (
        "21.37 ms of it with a collective in flight (dp 22.1 ms in 9 collectives a step, tp 16.0 ms in 5); "
        "collectives timed by" in said
    )
    assert said.endswith(" The clock's own work took 0.25 ms a step (0.2% of the step).")
