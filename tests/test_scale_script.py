"""scale on a user's script (issue 53): run unmodified at each world size. Weak scaling keeps the script's batch
per rank (its throughput in rank-steps/s where commprof is not told the batch); --strong divides the batch the
script is given in --batch-argument among the ranks. Before, `scale -- train.py` ended in "Got unexpected extra
argument(s)"."""

import json

import pytest

from commprof.render.scale import model_notes
from commprof.results.store import load_result
from tests.conftest import REPO, commprof_here

pytestmark = pytest.mark.slow
SCRIPT = REPO / "tests" / "data" / "scripts" / "train_default_ddp.py"
STEPS = ("--epochs", "1", "--steps-per-epoch", "100")  # --max-steps ends each launch before


def _scale(tmp_path, name, *options, script_args=()):
    result = commprof_here(
        "scale", "--run-id", name, "--world-sizes", "1,2", "--repeats", "1", "--max-steps", "24", *options,
        "--", str(SCRIPT), *script_args, *STEPS, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((tmp_path / "reports" / name / "report.json").read_text()), result.stdout


def test_strong_scaling_divides_the_batch_argument_among_the_ranks(tmp_path):
    report, out = _scale(
        tmp_path, "s", "--strong", "--batch-argument", "--batch-size", script_args=("--batch-size", "64")
    )
    assert report["mode"] == "strong" and report["batch_argument"] == "--batch-size"
    assert [(p["world_size"], p["per_rank_batch"], p["global_batch"]) for p in report["points"]] == [
        (1, 64, 64),
        (2, 32, 64),
    ]
    for size, batch in ((1, "64"), (2, "32")):
        run = json.loads((tmp_path / "traces" / f"s-ws{size}-r1" / "run.json").read_text())
        assert run["script"][run["script"].index("--batch-size") + 1] == batch
        assert run["steps_completed"] == 24 and run["world_size"] == size
    assert report["parameters"] == 792_074  # 12 layers of 256x256 and a 256x10 head, from the DDP the script built
    assert report["bucket_cap_mb"] is None  # the script passes none: DDP's default
    assert all(p["samples_per_s"] > 0 and p["step_ms"]["value"] > 0 for p in report["points"])
    # the terminal says what render makes of the scale (the batch divided among the ranks: test_render_kind_words)
    said = " ".join(out.split())
    assert all(" ".join(note.split()) in said for note in model_notes(load_result(tmp_path / "reports" / "s")))
