"""Whole-trace figures agree with Holistic Trace Analysis on the real GPU traces in tests/data/traces.

HTA's numbers were recorded by benchmarks/generate/hta_reference.py (HTA 0.5.0) in tests/data/hta_reference.json;
with HTA installed, test_live_hta_matches_the_recorded_numbers recomputes them.
"""

import json
from pathlib import Path

import pytest

from commprof.analysis.whole_trace import whole_trace
from commprof.trace.load import load_run
from tests.conftest import TRACES

REFERENCE = json.loads((Path(__file__).parent / "data" / "hta_reference.json").read_text())
FIGURES = ("idle_pct", "compute_pct", "non_compute_pct", "overlap_pct")
TOLERANCE_PP = 0.1  # HTA rounds its shares to 0.01 pp


def cases():
    for folder, ranks in REFERENCE["traces"].items():
        for rank, figures in ranks.items():
            yield pytest.param(folder, rank, figures, id=f"{folder}-rank{rank}")


@pytest.mark.parametrize("folder, rank, hta", list(cases()))
def test_whole_trace_figures_match_hta(folder, rank, hta):
    (trace,) = [r for r in load_run([TRACES / folder], workers=1).ranks if str(r.rank) == rank]
    ours = whole_trace(trace)
    assert ours.window_us == hta["window_us"]
    for name in FIGURES:
        if hta[name] is None:
            assert getattr(ours, name) is None  # no communication at all
        else:
            assert abs(getattr(ours, name) - hta[name]) <= TOLERANCE_PP, name


def test_live_hta_matches_the_recorded_numbers():
    pytest.importorskip(
        "hta", reason="Holistic Trace Analysis is not installed (optional: pip install HolisticTraceAnalysis)"
    )
    from benchmarks.generate.hta_reference import hta_figures

    assert hta_figures(TRACES / "nccl-a100-rank0-of-2") == REFERENCE["traces"]["nccl-a100-rank0-of-2"]


@pytest.mark.parametrize("folder", ["nccl-trace-diff/test", "nccl-a100-rank0-of-16"])
def test_analyze_with_hta_windows_reproduces_hta(tmp_path, folder, no_figures):
    from commprof.commands.analyze import analyze

    report = analyze([TRACES / folder], name="hta", reports_dir=tmp_path, workers=1, windows="hta").result
    (rank,) = report.ranks
    (hta,) = REFERENCE["traces"][folder].values()
    window = rank.step_time_ms.mean
    assert rank.steps == 1 and window * 1000 == pytest.approx(hta["window_us"])
    assert 100 * rank.compute_ms / window == pytest.approx(hta["compute_pct"], abs=TOLERANCE_PP)
    assert 100 * rank.idle_ms / window == pytest.approx(hta["idle_pct"], abs=TOLERANCE_PP)
    assert 100 * rank.overlap_ms / rank.comm_ms == pytest.approx(hta["overlap_pct"], abs=TOLERANCE_PP)
    assert any("Holistic Trace Analysis" in w for w in report.warnings)
