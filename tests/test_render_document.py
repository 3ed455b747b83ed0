"""One document per result, rendered three ways: the terminal (at any width, piped), Markdown and HTML show the
same tables and sentences, and nothing is ever cut."""

import html
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from commprof.render import html as html_page
from commprof.render import markdown as markdown_page
from commprof.render import terminal
from commprof.render.document import Document, Figure, Section, Table, Text
from commprof.render.views import view_of
from commprof.results.report import Report
from commprof.results.store import _build
from tests.golden_reports import GOLDEN
from tests.test_results_family import EXAMPLES

WIDTHS = (60, 80, 200)
REPORTS = ["nccl-a100-rank0-of-16.json", "rccl-mi300-rank0-of-8.json", "gloo-cpu-rank34-of-300.json"]


def piped(document: Document, width: int) -> str:
    buffer = io.StringIO()
    terminal.show(document, Console(file=buffer, width=width, force_terminal=False, soft_wrap=True))
    return buffer.getvalue()


def documents() -> list[tuple[str, Document]]:
    found = [(kind, view_of(result).document(result)) for kind, result in sorted(EXAMPLES.items())]
    for name in REPORTS:  # golden reports lack the fields that differ between analyses
        data = {**json.loads((GOLDEN / name).read_text()), "created": "now", "sources": ["t.json"]}
        report = _build(Report, data)
        found.append((name, view_of(report).document(report)))
    return found


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("name", "document"), documents(), ids=[n for n, _ in documents()])
def test_every_renderer_shows_every_cell_and_sentence(name, document):
    """Every table cell, whole, in the terminal at 60, 80 and 200 columns (piped), in report.md and in report.html;
    every sentence in all of them; no table line wider than the terminal."""
    md = markdown_page.render(document)
    page = html.unescape(html_page.render(document, {}))
    screens = {width: piped(document, width) for width in WIDTHS}
    for table in document.tables():
        for row in table.rows:
            for cell in row:
                assert f" {cell.replace('|', chr(92) + '|')} |" in md, cell
                assert f"<td>{cell}</td>" in page, cell
                for width, screen in screens.items():
                    assert re.search(rf"(^|\s|: ){re.escape(cell)}(\s|$)", screen, re.M), (width, cell)
    for text in document.texts():
        assert words(text.text) in words(md) and words(text.text) in words(page)
        for screen in screens.values():
            assert words(text.text) in words(screen)
    # a table's line has cells apart by two spaces; a finding's `do:` line is code, whose comment may follow two
    table_lines = [
        line for line in screens[60].splitlines() if "  " in line.strip() and not line.strip().startswith("do:")
    ]
    assert all(len(line) <= 60 for line in table_lines)


def test_a_wide_table_is_split_into_parts_that_each_name_the_row():
    """Five columns of 12 characters do not fit 40: each part repeats the key column (rank) and says it is a part;
    at 80 it is whole."""
    table = Table(("rank", "alpha", "beta", "gamma", "delta"), [("0", *("x" * 12,) * 4), ("1", *("y" * 12,) * 4)])
    parts = terminal.table_lines(table, 40)
    assert parts[0] == "(part 1 of 2, split to fit 40 columns)"
    assert parts[1].split() == ["rank", "alpha", "beta"]
    assert parts[3].split() == ["0", "x" * 12, "x" * 12]
    assert parts[6] == "(part 2 of 2, split to fit 40 columns)"
    assert parts[7].split() == ["rank", "gamma", "delta"]
    assert max(len(line) for line in parts) <= 40
    whole = terminal.table_lines(table, 80)
    assert whole[0].split() == ["rank", "alpha", "beta", "gamma", "delta"] and len(whole) == 5


def test_a_table_that_cannot_fit_is_stacked_by_row():
    """A cell wider than the screen: a block per row, 'header: value' lines wrapped at words, nothing cut."""
    reason = "not run: NCCL needs one CUDA device per rank and this host has none at all"
    table = Table(("backend", "step ms"), [("nccl", reason), ("gloo", "12.5")])
    lines = terminal.table_lines(table, 30)
    assert lines[0] == "backend nccl"
    assert words(" ".join(lines[1:4])).startswith("step ms: not run: NCCL needs one CUDA")
    assert words(" ".join(lines)).count(reason) == 1
    assert "backend gloo" in lines and "  step ms: 12.5" in lines
    assert all(len(line) <= 30 for line in lines)


def test_one_document_three_renderers_by_hand():
    document = Document(
        "commprof x: t",
        [
            Section("", [Text("9% of the step is exposed.", "headline"), Figure("a.png", "a plot")]),
            Section("Findings", [Text("1. do it", "strong"), Text("evidence: e", "item"), Text("f(x=1)", "action")]),
            Section("Notes", [Text("n1", "note"), Text("n2", "note")]),
        ],
    )
    md = markdown_page.render(document)
    assert md.splitlines()[:4] == ["# commprof x: t", "", "**9% of the step is exposed.**", ""]
    assert "![a plot](a.png)" in md and "- do: `f(x=1)`" in md and "## Notes\n\n- n1\n\n- n2" in md
    page = html_page.render(document, {"a.png": b"png"})
    assert '<p class="headline">9% of the step is exposed.</p>' in page and 'src="data:image/png;base64,cG5n"' in page
    assert '<ul><li class="note">n1</li><li class="note">n2</li></ul>' in page
    screen = piped(document, 80)
    assert screen.splitlines() == [
        "commprof x: t",
        "9% of the step is exposed.",
        "figure: a.png (a plot), in report.html and report.md",
        "Findings",
        "1. do it",
        "   evidence: e",
        "   do: f(x=1)",
        "Notes",
        "n1",
        "n2",
    ]


def test_no_renderer_draws_a_result_kind_of_its_own():
    """The kinds build documents; only terminal.py, markdown.py and html.py render them."""
    render = Path(__file__).resolve().parent.parent / "commprof" / "render"
    for module in render.glob("*.py"):
        if module.name in ("terminal.py", "markdown.py", "html.py", "plots.py", "figure_process.py"):
            continue
        source = module.read_text()
        assert "console.print" not in source and "<h1>" not in source, module.name


@pytest.mark.parametrize(("name", "document"), documents(), ids=[n for n, _ in documents()])
def test_no_legend_covers_data(monkeypatch, name, document):
    """Every plot a result draws: each legend lies outside its axes, where no bar or line is drawn."""
    from commprof.render import plots

    drawn = []
    monkeypatch.setattr(plots, "png_bytes", lambda fig: drawn.append(fig) or b"")
    result = EXAMPLES.get(name)
    if result is None:
        result = _build(Report, {**json.loads((GOLDEN / name).read_text()), "created": "now", "sources": ["t"]})
    view_of(result).images(result)
    legends = 0
    for figure in drawn:
        renderer = figure.canvas.get_renderer()
        for axes in figure.axes:
            legend = axes.get_legend()
            if legend is not None:
                legends += 1
                assert not legend.get_window_extent(renderer).overlaps(axes.get_window_extent(renderer)), name
    assert legends or name in ("backends", "diff")


def test_a_script_that_built_nothing_data_parallel_is_said_to_have_trained_alone():
    """Issue 72: imagenet's main.py wraps no model on CPU; its report said only 'No communication in the profiled
    steps'. A script run whose job built nothing and whose ranks never communicated is told so plainly."""
    import dataclasses

    from commprof.commands.reporting import report_from_traces
    from commprof.render.report_view import silent_headline
    from commprof.results.job import Job
    from tests.conftest import REPO

    report = report_from_traces([REPO / "tests" / "data" / "slow-input"], "x", "analysis", workers=1)[0]
    alone = dataclasses.replace(report, run=dataclasses.replace(report.run, job=Job([])))
    assert silent_headline(alone) == (
        "No communication in the profiled steps: the script built no DistributedDataParallel, FSDP, ZeRO engine or "
        "Horovod optimizer, so each of its 2 ranks trained alone"
    )
    assert silent_headline(report) == "No communication in the profiled steps"  # it built a DDP: not said


def test_a_script_that_ended_inside_the_window_is_given_a_schedule_that_fits():
    from commprof.render.report_view import short_window_text
    from commprof.results.report import ShortWindow

    said = short_window_text(ShortWindow(first_step=8, last_step=10, asked=10, fits=(3, 1, 5)))
    assert said == (
        "the script ended at step 10: the report covers 3 of the 10 profiled steps asked for (steps 8-10); "
        "--schedule 3,1,5 profiles steps 5-9 inside it"
    )


def test_uneven_inputs_under_join_are_named_with_each_ranks_own_steps():
    from commprof.render.report_view import joined_text

    assert joined_text({"0": 10}, 40) == (
        "uneven inputs under Join: rank 0 ran 30 of the 40 steps on its own inputs, then shadowed the others' last 10"
    )


def test_zero_redundancy_optimizer_says_what_it_shards():
    from commprof.render.report_view import zero_redundancy_text

    assert zero_redundancy_text(2).startswith("torch's ZeroRedundancyOptimizer shards the optimizer's state over the 2")


def golden_report(name: str) -> Report:
    return _build(Report, {**json.loads((GOLDEN / name).read_text()), "created": "now", "sources": ["t.json"]})


def test_the_job_step_and_the_profilers_cost_are_said_from_the_job_step():
    """The job's step without the profiler 50.0 ms, 61.0 under it: +22%, in the headline and the profiler's line
    (test_reports_output.py: the figures one each wherever a report quotes them)."""
    import dataclasses

    from commprof.render.tables import headline, profiler_cost
    from commprof.results.report import JobStep

    report = dataclasses.replace(golden_report("nccl-a100-rank0-of-2.json"), job_step=JobStep(61.0, 50.0))
    said = headline(report)
    assert said.startswith(
        "The job's step takes 50.0 ms without the profiler (median of its unprofiled steps, slowest rank). The "
        "profiler slowed the steps it recorded by 22%; in them, "
    )
    assert profiler_cost(report) == (
        "Profiler's own cost: the profiled steps took 61.0 ms against 50.0 ms outside its window (+22%; medians of "
        "the slowest rank's time per step, wall clock); the breakdown describes these slowed steps"
    )


def test_a_traced_step_is_named_as_people_count_steps():
    """A commprof run's first recorded range, ProfilerStep#0, is its schedule's first recorded step (--schedule
    5,2,10: step 8); traces from elsewhere keep the range's own name."""
    import dataclasses

    from commprof.render.tables import step_named
    from commprof.results.report import StepBreakdown
    from tests.conftest import run_summary

    steps = [StepBreakdown(0, f"ProfilerStep#{k}", 10.0, 8.0, 2.0, 1.0, 1.0, 0.0, 0.0) for k in range(12)]
    traces = Report("t", "analysis", "now", [], [], [], steps=steps)
    assert step_named(traces, "ProfilerStep#3") == "ProfilerStep#3"
    ours = dataclasses.replace(traces, run=run_summary())
    assert step_named(ours, "ProfilerStep#3") == "step 11 (ProfilerStep#3 in the trace)"
