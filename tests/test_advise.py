"""`commprof advise`: a real run's setting findings rerun against its own setting, interleaved; the predicted
gain beside the measured one."""

import json
import shutil

import pytest

from commprof.render.findings_text import advice_rows
from commprof.results.store import load_report
from tests.conftest import PLANTED_GAIN, commprof, plant_findings, planted_finding

pytestmark = pytest.mark.slow
ROUNDS = [
    "--repeats",
    "3",
    "--max-repeats",
    "3",
    "--steps-per-repeat",
    "2",
    "--warmup-steps",
    "1",
    "--profile-steps",
    "2",
]


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


def test_advise_refuses_what_it_cannot_check(tmp_path, cpu_run):
    cwd, _ = cpu_run
    report = json.loads((cwd / "reports" / "e2e" / "report.json").read_text())
    report["findings"] = [f for f in report["findings"] if not f["setting"]]
    (tmp_path / "no-settings.json").write_text(json.dumps(report))
    result = commprof("advise", str(tmp_path / "no-settings.json"), cwd=cwd)
    assert (
        result.returncode == 2
        and "no finding of this run is a setting to try" in result.stderr.strip().splitlines()[-1]
    )
    result = commprof("advise", "nonexistent", cwd=cwd)
    assert result.returncode == 2 and "nonexistent" in result.stderr and "Traceback" not in result.stderr
