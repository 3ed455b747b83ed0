"""The cross-rank summary in words (render/skew_text.skew_summary), made from facts built by hand on a real report
(nccl-sampled-2-of-128: rank 1 made the others wait most, no straggler claimed): the straggler named, or the one
reason none is, and the stretches of the whole run where a rank was late. test_straggler_evidence.py decides these
facts from hand-built traces."""

import dataclasses
import json

import pytest

from commprof.render.skew_text import skew_summary
from commprof.results.common import Estimate
from commprof.results.rank_facts import Straggler
from commprof.results.report import Finding, Report
from commprof.results.store import load_report
from commprof.results.whole_run import Stretch, WholeRun
from tests.golden_reports import GOLDEN


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Report:
    folder = tmp_path_factory.mktemp("golden")
    data = json.loads((GOLDEN / "nccl-sampled-2-of-128.json").read_text())
    (folder / "report.json").write_text(json.dumps({**data, "created": "", "sources": []}))
    return load_report(folder / "report.json")


def rank_1_late(cost_ms: float) -> Straggler:
    """Rank 1, late at every all-reduce by `cost_ms`, in its backward's compute (CPU ranks)."""
    return Straggler(
        1, cost_ms, {"all_reduce": cost_ms}, 4, 4, 0, None, {"compute_ms": cost_ms}, 0.0, "compute_ms", cost_ms,
        "backward", False,
    )  # fmt: skip


def weighed(report: Report, cost_ms: float, gain: Estimate | None, pct: float | None, named: bool = False) -> Report:
    """`report` whose rank 1 costs the others `cost_ms` per step in the profiled steps, its straggler finding claimed
    (`named`), kept within the noise (its gain `gain`), or not weighed at all (`gain` None: one step)."""
    assert report.cross_rank is not None
    skew = dataclasses.replace(
        report.cross_rank, straggler=1, straggler_cost_ms=cost_ms, straggler_ops={"all_reduce": cost_ms}
    )
    found = [Finding("straggler", rank_1_late(cost_ms), gain_ms=gain, gain_pct=pct)] if gain is not None else []
    kept = [] if named else found
    claimed = found if named else []
    return dataclasses.replace(report, cross_rank=skew, findings=claimed, within_noise=kept)


def test_a_straggler_late_in_every_step_is_named(golden):
    said = skew_summary(weighed(golden, 3.0, Estimate(3.0, 3.0, 3.0), 6.0, named=True))
    assert "Straggler: rank 1, which makes the others wait 3.00 ms per step in all (at all_reduce 3.00 ms)" in said
    assert "worth acting on" not in said


def test_a_rank_late_in_half_the_steps_is_not_consistent(golden):
    """Its cost per step 3, 0, 3, 0 ms: median 1.5, an interval widened for a rerun of -0.6 to 3.6 ms."""
    said = skew_summary(weighed(golden, 1.5, Estimate(1.5, 1.5 - 1.5 * 2**0.5, 1.5 + 1.5 * 2**0.5), 3.0))
    assert (
        "No rank is a straggler worth acting on: rank 1 made the others wait most in the profiled steps, 1.50 ms "
        "per step, but not late consistently: weighed over the run's steps, its cost is 1.5 ms per step (95% CI "
        "-0.6 to 3.6), an interval that includes 0. "
    ) in said


def test_a_rank_late_in_every_step_by_little_is_under_the_practical_share(golden):
    said = skew_summary(weighed(golden, 0.5, Estimate(0.5, 0.5, 0.5), 1.0))
    assert (
        "No rank is a straggler worth acting on: rank 1 made the others wait most in the profiled steps, 0.50 ms "
        "per step, late consistently (weighed over the run's steps, its cost is 0.5 ms per step (95% CI 0.5 to "
        "0.5), 1.0% of the step) but under 3% of the step. "
    ) in said


def test_one_step_is_too_few_to_weigh(golden):
    said = skew_summary(weighed(golden, 3.0, None, None))
    assert (
        "No rank is a straggler worth acting on: rank 1 made the others wait most in the profiled steps, 3.00 ms "
        "per step, over fewer than two steps, too few to tell whether it is late in every step. "
    ) in said


def test_the_straggler_line_names_only_the_stretches_its_rank_was_late_in(golden):
    """Rank 1 made the others wait most in its profiled steps, kept within the noise (the report as it is). With
    stretches where rank 0 was late in 25-44 and rank 1 in 75-94, the line says rank 1's stretch only; with rank 0's
    alone, it names rank 0; with one stretch, nothing."""
    assert golden.cross_rank.straggler == 1 and not any(f.kind == "straggler" for f in golden.findings)

    def said(*stretches: Stretch) -> str:
        whole = WholeRun("", [0, 1], 120, 1, 20.0, 5.0, 30.0, 0, stretches=list(stretches))
        return skew_summary(dataclasses.replace(golden, whole_run=whole))

    calm = [Stretch(1, 24, 20.0, 5.0, 1.0), Stretch(45, 74, 20.0, 5.0, 1.0)]
    rank0 = Stretch(25, 44, 60.0, 30.0, 1.0, late_rank=0, late_ms=40.0)
    rank1 = Stretch(75, 94, 60.0, 30.0, 1.0, late_rank=1, late_ms=41.0)
    assert "it was late in steps 75-94 only: the others waited 41.0 ms a step for it there" in said(*calm, rank0, rank1)
    assert "rank 0 was late in steps 25-44 only: the others waited 40.0 ms a step" in said(*calm, rank0)
    assert "only:" not in said(Stretch(1, 120, 20.0, 5.0, 1.0, late_rank=1, late_ms=3.0))
