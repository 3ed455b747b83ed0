"""advise on a built-in model's run whose report was given a setting finding (issue 71, item 3: the suite keeps
advise of a script's run, tests/test_script_baseline_runs.py). On demand:

    python -m pytest benchmarks/check/controls/test_advise_controls.py -p no:cacheprovider"""

import json
import shutil

import pytest

from commprof.render.findings_text import advice_rows
from commprof.results.store import load_report
from tests.conftest import PLANTED_GAIN, commprof, plant_findings, planted_finding
from tests.test_advise import ROUNDS

pytestmark = pytest.mark.slow


def test_advise_checks_a_runs_setting_findings(tmp_path, cpu_run):
    """The run's report is given one finding that is a setting (bucket_cap_mb=5, predicted 2.0 ms [1.0, 3.0])
    and one that is not; advise measures the run's own setting (25 MB) and the advised one, and shows both gains.
    The run is the shared real run's (a copy of its report.json: advise reruns the job from the report alone)."""
    cwd, _ = cpu_run
    (tmp_path / "reports" / "e2e").mkdir(parents=True)
    shutil.copy(cwd / "reports" / "e2e" / "report.json", tmp_path / "reports" / "e2e")
    plant_findings(
        tmp_path / "reports" / "e2e",
        planted_finding("bucket_cap", "bucket_cap_mb=5", {"bucket_cap_mb": 5}),
        planted_finding("input_stall", "stall", {}),
    )
    result = commprof("advise", "e2e", "--json", *ROUNDS, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    advised = json.loads(result.stdout)
    assert advised["kind"] == "advise" and advised["name"] == "e2e-advise"
    settings = {s["label"]: s for s in advised["sweep"]["settings"]}
    assert sorted(settings) == ["bucket-25mb", "bucket-5mb"]
    assert (
        settings["bucket-5mb"]["predicted_gain_ms"] == PLANTED_GAIN
        and settings["bucket-25mb"]["predicted_gain_ms"] is None
    )
    measured = settings["bucket-5mb"]["gain_ms"]
    assert measured["low"] <= measured["value"] <= measured["high"] and settings["bucket-25mb"]["gain_ms"]["value"] == 0
    page = (tmp_path / "reports" / "e2e-advise" / "report.md").read_text()
    # the page's table of the findings checked: a row for the setting with a predicted gain, as render makes it
    rows = advice_rows(load_report(tmp_path / "reports" / "e2e-advise").sweep)
    assert [row[0] for row in rows] == ["bucket-5mb"] and "### The findings, checked" in page
    assert all(f"| {' | '.join(row)} |" in page for row in rows)
