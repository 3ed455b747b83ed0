"""What a run leaves for people: self-contained HTML, the job timeline, --json, and diff.

timeline.json is checked with jsonschema (an independent validator) against the Trace Event
Format as its specification describes it (tests/data/chrome_trace_schema.json), plus the
format's rule that complete events on one thread nest. Perfetto's own trace processor would
download a binary at run time, which cannot work here."""

import dataclasses
import json
import re
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest

from commprof.analysis.analyze import analyze
from commprof.analysis.diff import diff_reports
from commprof.results.job import Job
from commprof.trace.load import load_run
from tests.conftest import commprof, run_record, run_summary
from tests.tracebuilder import GLOO, TraceBuilder

SCHEMA = json.loads((Path(__file__).parent / "data" / "chrome_trace_schema.json").read_text())


@pytest.mark.slow
def test_html_report_is_self_contained(cpu_run):
    cwd, _ = cpu_run
    html = (cwd / "reports" / "e2e" / "report.html").read_text()
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import""", html, re.I)
    assert html.count("data:image/png;base64,") >= 2  # breakdown bars and the step timeline
    assert "all_reduce" in html and "Where the step goes" in html and "Across ranks" in html
    markdown = (cwd / "reports" / "e2e" / "report.md").read_text()
    for image in ("breakdown.png", "timeline.png"):
        assert f"]({image})" in markdown and (cwd / "reports" / "e2e" / image).stat().st_size > 5000


@pytest.mark.slow
def test_job_timeline_is_a_valid_chrome_trace(cpu_run):
    cwd, _ = cpu_run
    timeline = json.loads((cwd / "reports" / "e2e" / "timeline.json").read_text())
    jsonschema.validate(timeline, SCHEMA)
    events = timeline["traceEvents"]
    names = sorted(e["args"]["name"] for e in events if e["name"] == "process_name")
    assert len(names) == 2 and all(n.startswith(f"rank {i}") for i, n in enumerate(names))
    lanes = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            lanes[(event["pid"], event["tid"])].append((event["ts"], event["ts"] + event["dur"]))
    for spans in lanes.values():  # complete events on one thread must nest, never cross
        stack = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and start >= stack[-1] - 2e-3:
                stack.pop()
            assert not stack or end <= stack[-1] + 2e-3
            stack.append(end)
    collectives = [e for e in events if e.get("cat") == "collective"]
    parts = [e for e in events if e.get("cat") in ("wait", "transfer")]
    assert collectives and len(parts) == 2 * len(collectives)  # every collective matched across the 2 ranks
    assert sum(e["dur"] for e in parts) == pytest.approx(sum(e["dur"] for e in collectives), rel=1e-6)


@pytest.mark.slow
def test_json_output_is_only_json(cpu_run):
    cwd, _ = cpu_run
    result = commprof("analyze", "traces/e2e", "--name", "as-json", "--json", cwd=cwd)
    assert result.returncode == 0
    assert json.loads(result.stdout)["name"] == "as-json"


def _run(tmp_path: Path, name: str, compute_us: float):
    folder = tmp_path / name
    folder.mkdir()
    for rank in (0, 1):
        trace = TraceBuilder(rank=rank)
        for step in range(12):
            start = step * 1000.0
            jitter = 7.0 * ((step * 5 + rank) % 4)  # a little step-to-step noise
            trace.step(step, start, compute_us + 300 + jitter)
            trace.x("aten::mm", start, compute_us + jitter)
            trace.x("gloo:all_reduce", start + compute_us + jitter, 250, cat="user_annotation", thread=GLOO)
        trace.write(folder / f"rank{rank}.json")
    return analyze(load_run([folder], workers=1), name, "analysis")


def test_diff_separates_real_changes_from_noise(tmp_path):
    """Two launches a side: compute 400 and 410 us against 600 and 590 (+0.19 ms between the sides' pooled
    medians), communication the same 250 us everywhere."""
    before = [_run(tmp_path, "a1", 400.0), _run(tmp_path, "a2", 410.0)]
    after = [_run(tmp_path, "b1", 600.0), _run(tmp_path, "b2", 590.0)]
    result = diff_reports(before, after)
    rows = {r.metric: r for r in result.rows}
    assert result.tested and rows["compute"].significant
    assert rows["compute"].delta == pytest.approx(0.19, abs=0.015) and rows["compute"].low > 0
    assert rows["profiled step"].significant and rows["profiled step"].delta_pct > 0
    assert rows["communication"].delta == pytest.approx(0.0) and not rows["communication"].significant
    assert not any(r.significant for r in diff_reports(before, before[::-1]).rows)


def test_diff_of_one_launch_a_side_claims_nothing(tmp_path):
    """The same +50% compute, one launch a side: its interval cannot hold the spread between launches."""
    result = diff_reports([_run(tmp_path, "a", 400.0)], [_run(tmp_path, "b", 600.0)])
    rows = {r.metric: r for r in result.rows}
    assert not result.tested and not any(r.significant for r in result.rows)
    assert rows["compute"].delta == pytest.approx(0.2, abs=0.01) and rows["compute"].low > 0  # still shown
    assert not result.tested  # render/diff.notes says why no change is claimed


def test_diff_discounts_a_difference_in_the_profilers_own_cost(tmp_path):
    """The same +50% compute change, but the profiler slowed side b's recorded steps 60% against side a's 0%: a
    change of less than that gap is not claimed, and a note says why."""
    from commprof.results.report import JobStep

    unslowed, slowed = JobStep(10.0, 10.0), JobStep(16.0, 10.0)
    before = [dataclasses.replace(_run(tmp_path, f"a{i}", 400.0 + i), job_step=unslowed) for i in (1, 2)]
    after = [dataclasses.replace(_run(tmp_path, f"b{i}", 600.0 - i), job_step=slowed) for i in (1, 2)]
    result = diff_reports(before, after)
    assert result.tested and not any(r.significant for r in result.rows)
    assert result.slowed == [0.0, pytest.approx(0.6)]


def test_diff_names_the_settings_that_differ(tmp_path):
    """Two built-in runs that differ in bucket_cap_mb only, then a script whose cap commprof replaced against the
    script as written: the settings table holds exactly what differs, in the words the report's header uses."""
    from commprof.render.diff import document
    from commprof.results.job import BuiltDDP

    base = _run(tmp_path, "a", 400.0)
    built_in = [dataclasses.replace(base, run=run_summary(cap)) for cap in (25.0, 0.05)]
    changed = diff_reports(built_in[:1], built_in[1:]).settings
    assert [(c.name, c.a, c.b) for c in changed] == [("bucket_cap_mb", "25.0", "0.05")]
    page = document(diff_reports(built_in[:1], built_in[1:]))  # its table of them, as every renderer draws it
    assert [t.rows for t in page.tables() if t.headers[0] == "setting"] == [[("bucket_cap_mb", "25.0", "0.05")]]
    asked = {
        "bucket_cap_mb": 1,
        "find_unused_parameters": False,
        "gradient_as_bucket_view": False,
        "static_graph": False,
    }
    script = ["train.py", "--epochs", "2"]

    def script_run(applied):
        built = BuiltDDP("Sequential", asked=asked, applied=applied)
        return dataclasses.replace(base, run=run_summary(script=script, job=Job([built])))

    own, capped = script_run({}), script_run({"bucket_cap_mb": 0.05})
    assert capped.run.settings() == {
        "script": "train.py --epochs 2",
        "bucket_cap_mb": "0.05 (commprof's; the script's 1)",
        "find_unused_parameters": "False",
        "gradient_as_bucket_view": "False",
        "static_graph": "False",
    }
    changed = diff_reports([own], [capped]).settings
    assert [(c.name, c.a, c.b) for c in changed] == [("bucket_cap_mb", "1", "0.05 (commprof's; the script's 1)")]
    against_built_in = {c.name: (c.a, c.b) for c in diff_reports([own], built_in[:1]).settings}
    assert against_built_in["script"] == ("train.py --epochs 2", None)
    assert against_built_in["precision"] == (None, "fp32")
    assert diff_reports([base], [base]).settings == []  # traces from elsewhere carry no settings


@pytest.mark.parametrize(
    "value, spec, text",
    [(-0.004, ".0%", "0%"), (0.004, ".0%", "0%"), (-0.0, ".0%", "0%"), (0.16, ".0%", "+16%"), (-0.051, ".0%", "-5%")]
    + [(-0.04, ".1f", "0.0"), (0.04, ".1f", "0.0"), (-0.06, ".1f", "-0.1"), (30.84, ".1f", "+30.8")],
)
def test_a_signed_number_that_rounds_to_zero_has_no_sign(value, spec, text):
    from commprof.results.common import signed

    assert signed(value, spec) == text


def test_the_job_step_and_the_profilers_cost_are_one_figure_each_wherever_quoted(tmp_path):
    """Outside the profiled window (steps 8-17) rank 0 takes 48 ms a step, rank 1 50; inside it they take turns
    being slow, rank 0 60 and 40, rank 1 40 and 62. The job waits for its slowest rank at every step: 50.0 ms
    without the profiler and 61.0 under it (the median of 60, 62, 60, ...), +22%, in the headline and the
    profiler's line alike (and in its finding: test_findings); never the slowest rank's median (51.0 ms, +2%)
    or a median over ranks (49.0 ms) beside them. The words of these two figures: test_render_document.py."""
    from commprof.analysis.distortion import job_step
    from commprof.render.markdown import render
    from commprof.render.report_view import document
    from commprof.render.tables import headline, profiler_cost

    outside = ([48.0] * 7, [50.0] * 7)
    steps = [[*outside[0], *[60.0, 40.0] * 5, *outside[0][:3]], [*outside[1], *[40.0, 62.0] * 5, *outside[1][:3]]]
    job = job_step(run_record((5, 2, 10), steps))
    assert (job.profiled_ms, job.unprofiled_ms, job.slowdown) == (61.0, 50.0, pytest.approx(0.22))
    report = dataclasses.replace(_run(tmp_path, "a", 400.0), job_step=job)
    text = render(document(report))
    assert headline(report) in text and profiler_cost(report) in text  # each of them says the job's step, 50.0 ms
    assert "49.0" not in text and "51.0" not in text and "+2%" not in text


@pytest.mark.parametrize(
    "value, low, high, text",
    [
        (0.52, 0.48, 0.55, ("0.52", "95% CI 0.48 to 0.55")),  # was '0.5 ... 0.5 to 0.5'
        (-0.0004, -0.0002, 0.001, ("0.000", "95% CI 0.000 to 0.001")),  # was '0.0 ... -0.0 to 0.0'
        (16.7, 13.0, 17.5, ("16.7", "95% CI 13.0 to 17.5")),
        (2.0, 2.0, 2.0, ("2.0", "95% CI 2.0 to 2.0")),  # equal values stay equal, at one decimal
    ],
)
def test_an_interval_is_printed_at_the_precision_that_shows_it(value, low, high, text):
    from commprof.results.common import Estimate, interval_text

    assert interval_text(Estimate(value, low, high)) == text


def test_the_profilers_own_cost_is_measured_and_warned_about():
    """Steps 7-16 profiled (wait 5, warmup 2, active 10) against steps 3-4 and 17-19 of the same run."""
    from commprof.analysis.distortion import job_step, large_slowdown, profiler_distortion

    slow_inside = [500.0] * 3 + [100.0] * 2 + [130.0] * 2 + [121.0] * 10 + [100.0] * 3
    run = run_record((5, 2, 10), [slow_inside, [x * 0.99 for x in slow_inside]])
    found = profiler_distortion(run)
    assert [(d.rank, d.profiled_ms, d.unprofiled_ms) for d in found] == [(0, 121.0, 100.0), (1, 121.0 * 0.99, 99.0)]
    assert found[0].slowdown == pytest.approx(0.21) and large_slowdown(job_step(run)) == pytest.approx(0.21)
    gentle = [[100.0] * 7 + [104.0] * 10 + [100.0] * 3]
    assert large_slowdown(job_step(run_record((5, 2, 10), gentle))) is None  # 4%: no warning
    unlucky = [[100.0] * 7 + [106.0] * 10 + [100.0] * 3]
    assert large_slowdown(job_step(run_record((5, 2, 10), unlucky))) == pytest.approx(0.06)
    assert profiler_distortion(run_record((5, 2, 10), [[]])) == []  # no steps recorded: nothing to compare
    assert job_step(run_record((5, 2, 10), [[]])) is None


def test_the_profilers_cost_and_the_drift_are_weighed_in_the_windows_stretch():
    """Steps 11-20 profiled at 110 ms; the run's step went from 100 to 400 ms at step 30 (the whole run's change
    point: the window lies in the stretch of steps 1-29). Against every unprofiled step the profiler would read as
    making the steps 3.6 times faster, and the job as drifting by 300 ms; in the window's stretch it costs 10% and the
    job did not drift."""
    from commprof.analysis.distortion import job_drift_ms, job_step, profiler_distortion

    steps = [[100.0] * 10 + [110.0] * 10 + [100.0] * 9 + [400.0] * 60]
    run = run_record((8, 2, 10), steps)
    assert job_step(run).unprofiled_ms == 400.0 and job_drift_ms(run) == 300.0  # what the change did to them
    job = job_step(run, side=(1, 29))
    assert (job.profiled_ms, job.unprofiled_ms) == (110.0, 100.0)
    assert profiler_distortion(run, side=(1, 29))[0].slowdown == pytest.approx(0.1)
    assert job_drift_ms(run, side=(1, 29)) == 0.0
    late = run_record((8, 2, 10), [[50.0] * 8 + [100.0] * 2 + [110.0] * 10 + [100.0] * 2])  # changed at step 9
    assert job_step(late).unprofiled_ms == 50.0  # steps 4-8 and 22
    assert job_step(late, side=(9, 22)).unprofiled_ms == 100.0  # step 22 only: the window's stretch


def test_a_traced_step_is_named_as_people_count_steps(tmp_path):
    """The profiler's first recorded range is the schedule's first recorded optimizer step (--schedule 5,2,10: step
    8, counted from 1); traces from elsewhere keep the range's own name (commprof's runs' words for a step:
    test_render_document.py)."""
    from commprof.render.tables import step_named

    traces = _run(tmp_path, "a", 400.0)  # ProfilerStep#0 to #11
    assert sorted({s.step for s in traces.steps}, key=lambda n: int(n.split("#")[1]))[0] == "ProfilerStep#0"
    assert step_named(traces, "ProfilerStep#3") == "ProfilerStep#3"
    ours = dataclasses.replace(traces, run=run_summary())
    assert ours.run.config.schedule.step_of(3, 0) == 11  # ProfilerStep#3 is the run's optimizer step 11
    assert step_named(ours, "ProfilerStep#3") != "ProfilerStep#3"
