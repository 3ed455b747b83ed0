"""`commprof analyze` on real traces in tests/data/traces: a report or one clear sentence (every folder's report:
tests/test_golden_reports.py)."""

from pathlib import Path

import pytest

from commprof.cli.app import main
from commprof.commands.analyze import big_traces
from commprof.results.store import load_report
from tests.conftest import LARGE_TRACE, TRACES, needs_large_trace


def analyze_cli(tmp_path, folder, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "analyze",
                str(TRACES / folder),
                "--name",
                "r",
                "--reports-dir",
                str(tmp_path),
                "--quiet",
                "--workers",
                "1",
            ]
        )
    return exit_info.value.code, capsys.readouterr()


@needs_large_trace
def test_the_large_trace_gives_a_report(tmp_path, capsys):
    code, output = analyze_cli(tmp_path, LARGE_TRACE, capsys)
    assert code == 0, output.err
    report = load_report(tmp_path / "r" / "report.json")
    assert report.ranks[0].rank == 1 and report.ranks[0].comm_ms > 0


def test_mixed_runs_are_refused_in_one_sentence(tmp_path, capsys):
    code, output = analyze_cli(tmp_path, "nccl-trace-diff", capsys)
    assert code == 2 and "different runs mixed together" in output.err and len(output.err.strip().splitlines()) == 1


def test_known_facts_of_the_real_traces(tmp_path, capsys):
    analyze_cli(tmp_path, "nccl-a100-rank0-of-2", capsys)
    report = load_report(tmp_path / "r" / "report.json")
    assert {(c.op, c.dtype, c.group_size) for c in report.collectives} >= {("all_reduce", "Float", 2)}
    assert all(c.bytes and c.busbw_gbps for c in report.collectives)  # sizes from the kernel args
    rccl = tmp_path / "rccl"
    with pytest.raises(SystemExit):
        main(
            [
                "analyze",
                str(TRACES / "rccl-mi300-rank0-of-8"),
                "--name",
                "x",
                "--reports-dir",
                str(rccl),
                "--quiet",
                "--workers",
                "1",
            ]
        )
    rccl_report = load_report(rccl / "x" / "report.json")
    assert rccl_report.ranks[0].comm_ms > 0  # ncclDevKernel_Generic on device 2 is communication
    assert {c.group_size for c in rccl_report.collectives} == {8}


@pytest.mark.slow
def test_figures_and_event_files_made_apart_are_the_same(tmp_path, capsys):
    """Above 16 MB uncompressed the figures and TensorBoard files are made in a process of their own (the a100
    trace is 3 MB of gzip, 25 MB of JSON); the report is the one made in this process alone (--workers 1)."""
    folder = TRACES / "nccl-a100-rank0-of-16"
    assert big_traces([folder])
    for name, workers in (("apart", []), ("here", ["--workers", "1"])):
        with pytest.raises(SystemExit) as exit_info:
            main(["analyze", str(folder), "--name", name, "--reports-dir", str(tmp_path), "--quiet", *workers])
        assert exit_info.value.code == 0, capsys.readouterr().err
    apart, here = tmp_path / "apart", tmp_path / "here"
    assert sorted(p.name for p in apart.iterdir()) == sorted(p.name for p in here.iterdir())
    for png in ("breakdown.png", "timeline.png"):
        assert (apart / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (apart / png).stat().st_size > 10_000
    assert (apart / "report.html").read_text().count("data:image/png;base64,") == 2
    events = {p.relative_to(apart / "tensorboard").parent for p in (apart / "tensorboard").rglob("events.out.*")}
    assert events == {p.relative_to(here / "tensorboard").parent for p in (here / "tensorboard").rglob("events.out.*")}
    assert events == {Path("job"), Path("rank0")}
    reports = [load_report(folder / "report.json") for folder in (apart, here)]
    assert reports[0].ranks == reports[1].ranks and reports[0].collectives == reports[1].collectives
