"""TensorBoard event files carry the report's own numbers: read back with TensorBoard's EventAccumulator and
compared with report.json, scalar by scalar."""

import dataclasses
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from commprof.commands.analyze import analyze
from commprof.render.tensorboard import STEP_FIGURES, step_number, write_events
from commprof.results.common import Estimate
from commprof.results.report import SettingResult, SweepResult
from commprof.results.store import load_report
from commprof.values import human_bytes
from tests.conftest import TRACES
from tests.test_results_family import EXAMPLES


def loaded(folder):
    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    return accumulator


def scalars(accumulator, tag):
    return {event.step: event.value for event in accumulator.Scalars(tag)}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    reports = tmp_path_factory.mktemp("reports")
    analyze([TRACES / "nccl-sampled-2-of-128"], name="tb", reports_dir=reports, workers=1)
    return load_report(reports / "tb" / "report.json"), reports / "tb" / "tensorboard"


def test_every_step_figure_of_every_rank(two_ranks):
    report, events = two_ranks
    for rank in report.ranks:
        run = loaded(events / f"rank{rank.rank}")
        mine = [s for s in report.steps if s.rank == rank.rank]
        for figure in STEP_FIGURES:
            assert scalars(run, f"step/{figure}") == pytest.approx(
                {step_number(s.step, i): getattr(s, figure) for i, s in enumerate(mine)}
            ), figure
        assert scalars(run, "step/comm_compute_ratio") == pytest.approx(
            {step_number(s.step, i): s.comm_ms / s.compute_ms for i, s in enumerate(mine)}
        )


def test_collectives_cross_rank_and_words(two_ranks):
    report, events = two_ranks
    job = loaded(events / "job")
    for c in report.collectives:
        tag = f"collectives/{c.op} {human_bytes(c.bytes)} ({c.backend})"
        assert scalars(job, f"{tag}/mean_ms") == pytest.approx(
            {step_number(s.step, i): s.mean_ms for i, s in enumerate(c.steps)}
        )
        if c.busbw_gbps is not None:
            assert scalars(job, f"{tag}/busbw_gbps") == pytest.approx(
                {step_number(s.step, i): s.busbw_gbps for i, s in enumerate(c.steps)}
            )
        assert scalars(job, f"{tag}/calls_per_step") == pytest.approx({0: c.calls_per_step})
    skew = report.cross_rank
    assert scalars(job, "cross_rank/wait_ms") == pytest.approx({r.rank: r.wait_ms for r in skew.ranks})
    assert scalars(job, "cross_rank/makes_others_wait_ms") == pytest.approx(
        {r.rank: r.wait_caused_ms for r in skew.ranks}
    )
    assert scalars(job, "cross_rank/straggler_cost_ms") == pytest.approx({0: skew.straggler_cost_ms})
    assert skew.straggler_cost_ms > 0
    texts = {
        tag: job.Tensors(tag)[0].tensor_proto.string_val[0].decode()
        for tag in job.Tags()["tensors"]
        if tag.startswith("report/")
    }
    assert "exposed communication" in texts["report/headline/text_summary"]
    assert texts["report/report.md/text_summary"].startswith("# commprof report: tb")


def swept(report):
    """The report as a sweep of two settings (as the HParams dashboard gets them)."""

    def setting(label, cap, step_ms, exposed, best=False):
        return SettingResult(
            label=label,
            options={"bucket_cap_mb": cap, "comm_hook": "none"},
            buckets=2,
            bucket_sizes=[1, 2],
            step_ms=Estimate(step_ms, step_ms - 1, step_ms + 2),
            samples=10,
            speedup=Estimate(1.0, 0.9, 1.1),
            significant=False,
            exposed_comm_ms=exposed,
            overlap_pct=50.0,
            allreduce_calls_per_step=2.0,
            traces="t",
            best=best,
        )

    settings = [setting("bucket-25mb", 25.0, 100.0, 10.0), setting("bucket-5mb", 5.0, 90.0, 4.0, best=True)]
    return dataclasses.replace(
        report,
        sweep=SweepResult(
            kind="sweep", baseline="bucket-25mb", best="bucket-5mb", settings=settings, recommendation="r", paste=None
        ),
    )


def test_one_hparams_run_per_sweep_setting(two_ranks, tmp_path):
    report = swept(two_ranks[0])
    write_events(report, tmp_path)
    for s in report.sweep.settings:
        run = loaded(tmp_path / "hparams" / s.label)
        assert scalars(run, "hparam/step_ms") == pytest.approx({0: s.step_ms.value})
        assert scalars(run, "hparam/step_ms_ci_low") == pytest.approx({0: s.step_ms.low})
        assert scalars(run, "hparam/step_ms_ci_high") == pytest.approx({0: s.step_ms.high})
        assert scalars(run, "hparam/exposed_comm_ms") == pytest.approx({0: s.exposed_comm_ms})
        assert run.PluginTagToContent("hparams")  # the HParams dashboard's session records are there


def test_scale_and_compare(tmp_path):
    scale, compare = EXAMPLES["scale"], EXAMPLES["compare"]
    write_events(scale, tmp_path / "s")
    run = loaded(tmp_path / "s" / "scale")
    assert scalars(run, "scale/speedup") == pytest.approx({p.world_size: p.speedup for p in scale.points})
    assert scalars(run, "scale/efficiency") == pytest.approx({p.world_size: p.efficiency for p in scale.points})
    write_events(compare, tmp_path / "c")
    gloo = loaded(tmp_path / "c" / "backend-gloo")
    assert scalars(gloo, "backend/step_ms") == pytest.approx({0: 10.0})
    assert not (tmp_path / "c" / "backend-nccl").exists()  # it did not run


def test_per_step_runs_for_the_first_ranks_only(two_ranks, tmp_path, monkeypatch):
    import commprof.render.tensorboard as tensorboard

    monkeypatch.setattr(tensorboard, "MAX_RANK_RUNS", 1)
    write_events(two_ranks[0], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job", "rank0"]
    assert scalars(loaded(tmp_path / "job"), "cross_rank/wait_ms").keys() == {0, 1}  # every rank still there


def test_the_trace_viewer_is_served_with_the_polyfill_commprof_ships():
    """The profiler plugin's trace page names the CDN polyfill that commprof replaces with its own copy; the
    copy, its license and commprof's trace page ship in the package."""
    import torch_tb_profiler

    from commprof.render.offline_tensorboard import CDN_POLYFILL, POLYFILL, STATIC

    page = (Path(torch_tb_profiler.__file__).parent / "static" / "trace_embedding.html").read_text()
    assert CDN_POLYFILL in page
    assert "@version 0.7.24" in (STATIC / POLYFILL).read_text()[:600]
    assert "BSD" in (STATIC / "LICENSE-webcomponents.txt").read_text()
    assert "trace_embedding.html" in (STATIC / "trace.html").read_text()


def test_each_dimension_of_a_mesh_has_its_scalars_per_rank(tmp_path):
    """Issue 70: a dp x tp run's TensorBoard has each dimension's communication and exposed time per rank, and the
    same op and size over two dimensions as two tags."""
    analyze([TRACES.parent / "fsdp-tp"], name="tp", reports_dir=tmp_path, workers=1)
    report = load_report(tmp_path / "tp" / "report.json")
    job = loaded(tmp_path / "tp" / "tensorboard" / "job")
    assert {d.dimension for d in report.dimensions} == {"dp", "tp"}
    for d in report.dimensions:
        assert scalars(job, f"dimension/{d.dimension}/comm_ms") == pytest.approx(
            {int(r): ms for r, ms in d.rank_comm_ms.items()}
        )
        assert scalars(job, f"dimension/{d.dimension}/exposed_ms") == pytest.approx(
            {int(r): ms for r, ms in d.rank_exposed_ms.items()}
        )
    tags = {t for t in job.Tags()["scalars"] if t.startswith("collectives/") and t.endswith("/calls_per_step")}
    assert len(tags) == len({(c.op, c.bytes, c.group) for c in report.collectives})  # none written over another
