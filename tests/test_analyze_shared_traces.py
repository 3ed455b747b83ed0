"""`commprof analyze` on every folder of real traces in tests/data/traces: a report or one clear sentence."""

import pytest

from commprof.results.store import load_report
from commprof.cli.app import main
from tests.conftest import LARGE_TRACE, TRACES

FOLDERS = ["gloo-cpu-rank34-of-300", "missing-fields", "nccl-a100-rank0-of-16", "nccl-a100-rank0-of-2",
           "nccl-sampled-2-of-128", "nccl-trace-diff/control", "nccl-trace-diff/test", "nccl-v100-world1",
           "rccl-mi300-rank0-of-8"]


def analyze_cli(tmp_path, folder, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["analyze", str(TRACES / folder), "--name", "r", "--reports-dir", str(tmp_path), "--quiet",
              "--workers", "1"])
    return exit_info.value.code, capsys.readouterr()


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_folder_gives_a_report(tmp_path, capsys, folder):
    code, output = analyze_cli(tmp_path, folder, capsys)
    assert code == 0, output.err
    report = load_report(tmp_path / "r" / "report.json")
    assert report.ranks and all(r.step_time_ms.median > 0 for r in report.ranks)


@pytest.mark.skipif(not LARGE_TRACE.is_dir(), reason="the 54 MB benchmark trace is not in ../shared/traces")
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
        main(["analyze", str(TRACES / "rccl-mi300-rank0-of-8"), "--name", "x", "--reports-dir", str(rccl), "--quiet"])
    rccl_report = load_report(rccl / "x" / "report.json")
    assert rccl_report.ranks[0].comm_ms > 0  # ncclDevKernel_Generic on device 2 is communication
    assert {c.group_size for c in rccl_report.collectives} == {8}
