"""Behaviour preserved: `commprof analyze` on every real trace folder gives a report, and the golden report.json
field for field and number for number (tests/golden_reports.py wrote them)."""

import json

import pytest

from commprof.results.store import load_report
from tests.golden_reports import FOLDERS, GOLDEN, analyze_folder, differences, golden_name


@pytest.mark.parametrize("folder", FOLDERS)
def test_report_matches_the_golden_one(tmp_path, folder, no_figures):
    expected = json.loads((GOLDEN / golden_name(folder)).read_text())
    assert differences(expected, analyze_folder(folder, tmp_path)) == []
    report = load_report(tmp_path / "golden" / "report.json")
    assert report.ranks and all(r.step_time_ms.median > 0 for r in report.ranks)


def test_differences_sees_a_changed_number_and_a_lost_field():
    assert differences({"a": 1.0, "b": [1, 2]}, {"a": 1.0 + 1e-12, "b": [1, 2]}) == []
    assert differences({"a": 1.0, "b": 2}, {"a": 1.01}) == [".b: missing", ".a: 1.0 -> 1.01"]
