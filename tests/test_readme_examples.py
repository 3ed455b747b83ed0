"""The example outputs of README.md and of the docs pages come from docs/readme_examples.py, which reruns them: every
example block of every page is one it knows how to rerun, and the parts of a report it leaves out are marked."""

import importlib.util
import sys

import pytest

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("readme_examples", REPO / "docs" / "readme_examples.py")
assert spec is not None and spec.loader is not None
examples = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = examples  # its dataclasses look their module up there
spec.loader.exec_module(examples)


def test_every_example_in_the_pages_is_one_the_script_reruns():
    assert examples.unlisted() == []
    assert "README.md" in examples.PAGES and examples.PAGES["README.md"], "the README shows no example"
    assert sorted(examples.pages_with_examples()) == sorted(examples.PAGES)


def test_a_page_with_an_example_the_script_does_not_list_is_found(tmp_path, monkeypatch):
    (tmp_path / "docs" / "commands").mkdir(parents=True)
    (tmp_path / "README.md").write_text("```\n$ commprof run --run-id a\nrun a\n```\n")
    (tmp_path / "docs" / "commands" / "new.md").write_text("```\n$ commprof bench\nbench\n```\n")
    monkeypatch.setattr(examples, "REPO", tmp_path)
    monkeypatch.setattr(examples, "README", tmp_path / "README.md")
    monkeypatch.setattr(examples, "DOCS", tmp_path / "docs")
    monkeypatch.setattr(examples, "PAGES", {"README.md": (examples.Example((examples.Command("commprof run"),)),)})
    assert examples.unlisted() == [
        "docs/commands/new.md: example blocks, but not in PAGES",
        "README.md: its examples ['commprof run --run-id a'] are not this script's ['commprof run']",
    ]


def test_the_sections_left_out_of_a_report_are_one_marker_each():
    output = "\n".join(
        [
            "tune x: 2 settings measured",
            "commprof report: x",
            "mlp (1 parameters), 2 ranks",
            "Tune",
            "bucket-5mb is best",
            "Where the step goes",
            "rank  step",
            "Collectives",
            "op",
            "Buckets DDP built",
            "setting  sizes",
            "traces: traces/x/",
            "report: reports/x/report.html",
        ]
    )
    assert examples.shown(output, ("Tune", "Buckets DDP built")) == [
        "tune x: 2 settings measured",
        "commprof report: x",
        "mlp (1 parameters), 2 ranks",
        "Tune",
        "bucket-5mb is best",
        "(...)",
        "Buckets DDP built",
        "setting  sizes",
        "traces: traces/x/",
        "report: reports/x/report.html",
    ]
    assert examples.shown(output, None) == output.split("\n")


def test_an_excerpt_starts_at_the_report_and_keeps_a_few_lines_of_each_section():
    lines = [
        "run x: train.py on 2 cpu rank(s), gloo",
        "commprof: starting ranks",
        "[rank0]: epoch 1 done",
        "commprof report: x",
        "The job's step takes 10.0 ms without the profiler",
        "Findings",
        "1. the steps start idle",
        "   do: DataLoader(...)",
        "2. bucket_cap_mb=2",
        "   do: DDP(model, bucket_cap_mb=2)",
        "By dimension",
        "dimension  groups",
        "traces: traces/x/",
        "report: reports/x/report.html",
    ]
    output = "\n".join(lines)
    # from the report's first line (3): its first two, the section and two of its lines; then the paths at the end
    assert examples.shown(output, ("Findings",), from_report=True, most=2) == [
        "(...)",
        *lines[3:8],
        "(...)",
        *lines[-2:],
    ]
    assert examples.shown(output, ("Findings", "By dimension"), most=1)[-6:] == [
        "1. the steps start idle",
        "(...)",
        "By dimension",
        "dimension  groups",
        "traces: traces/x/",
        "report: reports/x/report.html",
    ]


def test_a_long_run_of_progress_lines_keeps_its_first_and_last_three():
    lines = ["tune x: 3 settings", *(f"commprof: launch {i}" for i in range(10)), "tune x: 3 settings measured"]
    assert examples.shown("\n".join(lines), ()) == [
        "tune x: 3 settings",
        "commprof: launch 0",
        "commprof: launch 1",
        "commprof: launch 2",
        "(...)",
        "commprof: launch 7",
        "commprof: launch 8",
        "commprof: launch 9",
        "tune x: 3 settings measured",
    ]


@pytest.mark.slow
def test_the_recorded_runs_examples_are_rerun_as_the_page_shows_them():
    """The device-mesh page's examples analyse runs recorded in tests/data: nothing is launched, so the fast tier
    reruns one (a process: slow, about 2 s) and finds the page's block, but for the time the report was made."""
    page = "docs/frameworks/device-meshes.md"
    example = examples.PAGES[page][1]
    text = (REPO / page).read_text()
    span = examples.blocks(text)[1]
    shown = text[span[0] : span[1]].rstrip("\n").split("\n")
    rerun = examples.run_example(example)
    created = "; created "
    assert [line.split(created)[0] for line in rerun] == [line.split(created)[0] for line in shown]
