"""README.md's example outputs come from docs/readme_examples.py, which reruns them: every example block in the
README is one it knows how to rerun, and the parts of a report it leaves out are marked."""

import importlib.util
import sys

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("readme_examples", REPO / "docs" / "readme_examples.py")
assert spec is not None and spec.loader is not None
examples = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = examples  # its dataclasses look their module up there
spec.loader.exec_module(examples)


def test_every_example_in_the_readme_is_one_the_script_reruns():
    text = examples.README.read_text()
    found = [examples.first_command(text, span) for span in examples.blocks(text)]
    assert found == [example.commands[0].line for example in examples.EXAMPLES]


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
