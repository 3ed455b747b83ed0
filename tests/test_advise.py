"""`commprof advise`: a real run's setting findings rerun against its own setting, interleaved; the predicted
gain beside the measured one."""

import json

import pytest

from tests.conftest import commprof_here

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


def test_advise_refuses_what_it_cannot_check(tmp_path, cpu_run):
    cwd, _ = cpu_run
    report = json.loads((cwd / "reports" / "e2e" / "report.json").read_text())
    report["findings"] = [f for f in report["findings"] if not f["setting"]]
    (tmp_path / "no-settings.json").write_text(json.dumps(report))
    result = commprof_here("advise", str(tmp_path / "no-settings.json"), cwd=cwd)
    assert (
        result.returncode == 2
        and "no finding of this run is a setting to try" in result.stderr.strip().splitlines()[-1]
    )
    result = commprof_here("advise", "nonexistent", cwd=cwd)
    assert result.returncode == 2 and "nonexistent" in result.stderr and "Traceback" not in result.stderr
