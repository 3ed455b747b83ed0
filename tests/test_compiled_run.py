"""torch.compile over DDP (issue 52, item 7) on a real compiled run: DDP compiled whole, not split, and said so.
Inductor's run and tune on a compiled script run on demand (benchmarks/check/controls/test_compiled_controls.py)."""

import json

import pytest

from commprof.render.compiled_text import compiled_line
from commprof.results.job import BuiltDDP
from commprof.results.store import load_report
from tests.conftest import REPO, commprof_here

pytestmark = pytest.mark.slow
SCRIPT = REPO / "tests" / "data" / "scripts" / "train_compiled.py"
PARAMETER_BYTES = 8 * (512 * 512 + 512) * 4  # eight Linear(512, 512), float32


def report(folder, name):
    return json.loads((folder / "reports" / name / "report.json").read_text())


def test_ddp_compiled_whole_is_not_split_and_said_so(tmp_path):
    args = ("run", "--run-id", "ddp-first", "--", str(SCRIPT), "aot_eager", "30", "ddp-first")
    result = commprof_here(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    compiled = report(tmp_path, "ddp-first")["run"]["compiled"]
    assert compiled["what"] == "DistributedDataParallel(Sequential)" and compiled["graphs"] == []
    # the page says what render makes of a DDP compiled whole (its words: test_render_model_words.py)
    loaded = load_report(tmp_path / "reports" / "ddp-first")
    run = loaded.run
    assert run is not None and run.compiled is not None and run.job.first(BuiltDDP) is not None
    md = (tmp_path / "reports" / "ddp-first" / "report.md").read_text()
    assert compiled_line(run.compiled, loaded.whole_run, built_ddp=True) in md
