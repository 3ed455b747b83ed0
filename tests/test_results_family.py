"""One family of results: every kind is written, loaded back equal, and rendered by render/ alone; the
layers import only what they may."""

import ast
import json
from pathlib import Path

import pytest
from rich.console import Console

from commprof.errors import UsageError
from commprof.render.finding_words import with_words
from commprof.render.outputs import markdown, show, write_result
from commprof.results.backends import BackendsResult
from commprof.results.bench import AlphaBeta, BenchResult, BenchRow
from commprof.results.common import Estimate
from commprof.results.compare import BackendRun, CompareResult
from commprof.results.diff import DiffResult, DiffRow
from commprof.results.scale import ScalePoint, ScaleReport
from commprof.results.store import KINDS, load_report, load_result
from tests.golden_reports import GOLDEN
from tests.test_render_whole_run import EXAMPLE as RUN_EXAMPLE

PACKAGE = Path(__file__).resolve().parent.parent / "commprof"
POINT = dict(
    global_batch=8,
    per_rank_batch=8,
    learning_rate=0.1,
    samples_per_s=100.0,
    compute_ms=5.0,
    exposed_comm_ms=1.0,
    idle_ms=0.5,
    allreduce_busbw_gbps=None,
)
EXAMPLES = {
    "scale": ScaleReport(
        name="s",
        mode="weak",
        model="mlp",
        parameters=10,
        device="cpu",
        backend="gloo",
        bucket_cap_mb=25.0,
        base_learning_rate=0.1,
        points=[
            ScalePoint(world_size=1, step_ms=Estimate(10.0, 9.0, 11.0), speedup=1.0, efficiency=1.0, **POINT),
            ScalePoint(world_size=2, step_ms=Estimate(12.0, 11.0, 13.0), speedup=1.7, efficiency=0.85, **POINT),
        ],
    ),
    "bench": BenchResult(
        name="b",
        world_size=2,
        rows=[
            BenchRow("gloo", "all_reduce", size, "float32", 10.0 + size / 1e3, 9.0, 12.0, 0.1, 0.1, True)
            for size in (1024, 4096)
        ],
        fits=[AlphaBeta("gloo", "all_reduce", 9.0, 1.0, 1.0, 2)],
        unavailable={"nccl": "no CUDA"},
    ),
    "compare": CompareResult(
        run_id="c",
        summary="gloo wins",
        rows=[
            BackendRun(
                "gloo",
                True,
                step_ms=10.0,
                comm_ms=3.0,
                exposed_comm_ms=1.0,
                overlap_ms=2.0,
                busbw_by_size={"4096": 0.5},
            ),
            BackendRun("nccl", False, reason="no CUDA"),
        ],
    ),
    "backends": BackendsResult(
        matrix={"gloo": {"cpu": {"send": [True, ""], "gather": [False, "not supported"]}}},
        not_available={"nccl/cuda": "no CUDA"},
        ops=["send", "gather"],
    ),
    "diff": DiffResult(
        a="x",
        b="y",
        rows=[DiffRow("step time", 10.0, 8.0, -2.0, -20.0, -3.0, -1.0, True)],
        world_sizes=[2, 4],
    ),
    "run": RUN_EXAMPLE,  # a real analysis's report with a whole-run record
}


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_written_loaded_and_rendered(tmp_path, kind):
    result = EXAMPLES[kind]
    files = write_result(result, tmp_path)
    assert files[0].name == "report.html" and all(f.exists() for f in files)
    # report.json holds the findings about ranks with their words beside their facts (render's with_words)
    assert load_result(tmp_path) == with_words(result) and load_result(tmp_path / "report.json").kind == kind
    page = (tmp_path / "report.html").read_text()
    assert "<script" not in page and "http" not in page.replace("http-equiv", "")  # offline, nothing fetched
    console = Console(record=True, width=160)
    show(result, console)
    text = console.export_text()
    assert markdown(result).startswith("# commprof ")
    expected = {
        "scale": "1.70",
        "bench": "all_reduce",
        "compare": "not run: no CUDA",
        "backends": "fails: gloo cpu gather",
        "diff": "-20.0%",
        "run": "rank 1 made 2 of them slow",
    }[kind]
    assert expected in text and expected in markdown(result)


def test_run_reports_load_as_the_same_family(tmp_path):
    data = json.loads((GOLDEN / "nccl-a100-rank0-of-2.json").read_text())
    (tmp_path / "report.json").write_text(json.dumps({**data, "created": "now", "sources": ["t.json"]}))
    report = load_result(tmp_path)
    assert report.kind == "analysis" and KINDS[report.kind] is type(report) and report.collectives


def test_only_breakdown_reports_where_a_breakdown_is_needed(tmp_path):
    write_result(EXAMPLES["scale"], tmp_path)
    with pytest.raises(UsageError, match="a `commprof scale` report"):
        load_report(tmp_path)


def imports(module: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("analysis", ("commprof.render", "torch", "commprof.cli", "commprof.launch", "commprof.commands")),
        ("trace", ("commprof.analysis.", "commprof.render", "torch", "commprof.cli", "commprof.commands")),
        ("results", ("commprof.analysis", "commprof.render", "torch", "commprof.trace", "commprof.commands")),
        ("render", ("torch", "commprof.analysis", "commprof.launch", "commprof.commands", "commprof.cli")),
        ("commands", ("commprof.cli",)),
        ("launch", ("commprof.cli", "commprof.commands", "commprof.render")),
    ],
)
def test_layers_import_only_what_they_may(layer, forbidden):
    for module in (PACKAGE / layer).glob("*.py"):
        # the interval maths is a leaf module that the classifier shares with the analysis; the profiler plugin
        # (not torch) is what render.offline_tensorboard serves offline
        allowed = {"commprof.trace.intervals", "torch_tb_profiler", "torch_tb_profiler.plugin"}
        bad = [name for name in imports(module) if name.startswith(forbidden) and name not in allowed]
        assert not bad, f"{module.name} imports {bad}"
