"""Where `commprof analyze` writes its report: named after the traces as given, and never onto a report that is
there already (the run's own, after `commprof run`), but beside it, saying where."""

import os
import shutil
from pathlib import Path

import pytest

from commprof.cli.app import main
from commprof.commands.analyze import _default_name, analyze, default_name
from commprof.errors import UsageError
from commprof.results.store import load_report
from tests.conftest import TRACES

pytestmark = pytest.mark.usefixtures("no_figures")  # where the report goes, not what it draws
RUN = "gloo-cpu-rank34-of-300"  # one small real trace
TRACE_FILE = "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def test_a_folder_is_named_after_itself(tmp_path, monkeypatch):
    assert default_name([TRACES / RUN]) == RUN
    assert default_name([TRACES / RUN / ".." / RUN]) == RUN
    monkeypatch.chdir(TRACES / RUN)
    assert default_name([TRACES / RUN / "."]) == RUN
    assert default_name([Path(".")]) == RUN


def test_a_file_is_named_after_the_file_as_given(tmp_path):
    assert default_name([TRACES / RUN / TRACE_FILE]) == "rank-34.Jul_15_10_52_41.1074"
    (tmp_path / "foo.json").write_text("{}")
    assert default_name([tmp_path / "foo.json"]) == "foo"
    # a link to a commprof run's rank0.pt.trace.json: the name typed, not the file it points at
    (tmp_path / "rank0.pt.trace.json.gz").symlink_to(TRACES / RUN / TRACE_FILE)
    (tmp_path / "one-file.json.gz").symlink_to(tmp_path / "rank0.pt.trace.json.gz")
    assert default_name([tmp_path / "one-file.json.gz"]) == "one-file"


def test_several_files_of_one_folder_are_named_after_the_folder(tmp_path):
    run = tmp_path / "r1"
    run.mkdir()
    for rank in (0, 1):
        (run / f"rank{rank}.pt.trace.json").write_text("{}")
    assert default_name([run / "rank0.pt.trace.json", run / "rank1.pt.trace.json"]) == "r1"
    other = tmp_path / "r2"
    other.mkdir()
    (other / "rank1.pt.trace.json").write_text("{}")
    assert default_name([run / "rank0.pt.trace.json", other / "rank1.pt.trace.json"]) == "rank0"


def test_after_the_runs_own_report_the_analysis_goes_beside_it(tmp_path):
    reports = tmp_path / "reports"
    (reports / RUN).mkdir(parents=True)  # the run's own report, as `commprof run` leaves it
    (reports / RUN / "report.json").write_text("{}")
    folders, notes = [], []
    for _ in range(3):
        outcome = analyze([TRACES / RUN], reports_dir=reports, workers=1)
        folders.append(outcome.files[0].parent.name)
        notes.append(outcome.note)
        assert outcome.result.name == folders[-1]
        assert load_report(outcome.files[0].parent).name == folders[-1]
    assert folders == [f"{RUN}-analysis", f"{RUN}-analysis-2", f"{RUN}-analysis-3"]
    assert notes[0] == (
        f"{reports / RUN} already exists, so this analysis goes to {reports / RUN}-analysis/ (--name NAME to choose)"
    )
    assert notes[2].endswith(f"goes to {reports / RUN}-analysis-3/ (--name NAME to choose)")
    assert (reports / RUN / "report.json").read_text() == "{}"  # untouched


def test_a_free_name_is_used_as_it_is_without_a_note(tmp_path):
    outcome = analyze([TRACES / RUN / TRACE_FILE], reports_dir=tmp_path, workers=1)
    assert outcome.files[0] == tmp_path / "rank-34.Jul_15_10_52_41.1074" / "report.html"
    assert outcome.note is None


def test_a_name_given_is_never_overwritten_nor_moved(tmp_path):
    (tmp_path / "mine").mkdir()
    with pytest.raises(UsageError, match="mine already exists; choose another --name"):
        analyze([TRACES / RUN], name="mine", reports_dir=tmp_path, workers=1)
    assert os.listdir(tmp_path) == ["mine"]


def test_the_command_line_says_where_the_report_went(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(TRACES / RUN, tmp_path / "traces" / "exp1")
    (tmp_path / "reports" / "exp1").mkdir(parents=True)
    name, note = _default_name([Path("traces/exp1")], Path("reports"))  # the command's note, as worded above
    assert name == "exp1-analysis" and note is not None
    with pytest.raises(SystemExit) as exit_info:
        main(["analyze", "traces/exp1", "--workers", "1"])
    captured = capsys.readouterr()
    assert exit_info.value.code == 0
    assert note in captured.err.splitlines()
    assert captured.out.splitlines()[-1].startswith("report: reports/exp1-analysis/report.html (also report.json")
