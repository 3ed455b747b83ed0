"""DeepSpeed scripts profiled unmodified: the engine found when the script imports DeepSpeed, recorded as built, its
step the training step's end; ZeRO's collectives named by what they are for. The real runs need deepspeed (the
optional extra `deepspeed`): they skip, saying so, where it is absent."""

import importlib.util
import sys

import pytest

from commprof.analysis.collectives import with_zero_purposes
from commprof.instrument.deepspeed import DeepSpeedWatch
from commprof.results.report import CollectiveStats
from commprof.results.store import load_report
from tests.conftest import REPO, commprof, load_json

SCRIPT = REPO / "tests" / "data" / "scripts" / "train_deepspeed.py"
NO_DEEPSPEED = importlib.util.find_spec("deepspeed") is None

FAKE_ENGINE = '''
class DeepSpeedEngine:
    """DeepSpeed's engine as far as commprof reads it: accumulation of 2 micro-steps, ZeRO stage 2."""

    def __init__(self, module):
        self.module, self.micro_steps = module, 0

    def zero_optimization_stage(self):
        return 2

    def zero_reduce_bucket_size(self):
        return 5e5

    def zero_allgather_bucket_size(self):
        return 500000

    def zero_overlap_comm(self):
        return True

    def zero_contiguous_gradients(self):
        return True

    def zero_reduce_scatter(self):
        return True

    def is_gradient_accumulation_boundary(self):
        return self.micro_steps % 2 == 1

    def step(self):
        self.micro_steps += 1
'''


def test_an_engine_is_found_when_the_script_imports_deepspeed(tmp_path, monkeypatch):
    """A stand-in deepspeed package: the engine class is wrapped as its module is imported; each engine is recorded
    with its stage and settings (5e5 read back as 500000), and its steps end the training step at accumulation
    boundaries only (micro-steps 2 and 4 of 4)."""
    import torch

    package = tmp_path / "deepspeed" / "runtime"
    package.mkdir(parents=True)
    for folder in (tmp_path / "deepspeed", package):
        (folder / "__init__.py").write_text("")
    (package / "engine.py").write_text(FAKE_ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("deepspeed", "deepspeed.runtime", "deepspeed.runtime.engine"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    ended = []
    watch = DeepSpeedWatch(lambda: ended.append(engine.micro_steps))
    watch.install()
    from deepspeed.runtime.engine import DeepSpeedEngine

    engine = DeepSpeedEngine(torch.nn.Linear(4, 2))
    for _ in range(4):
        engine.step()
    (built,) = watch.built
    assert (built.module, built.zero_stage, built.parameters) == ("Linear", 2, 10)
    assert built.settings == {
        "reduce_bucket_size": 500000,
        "allgather_bucket_size": 500000,
        "overlap_comm": True,
        "contiguous_gradients": True,
        "reduce_scatter": True,
    }
    assert ended == [2, 4] and watch.engine is engine


def stats(phase: str, op: str, nbytes: int, dtype: str = "float", purpose: str | None = None) -> CollectiveStats:
    return CollectiveStats(op, "gloo", dtype, nbytes, 2, 10, 1.0, 1.0, None, None, phase=phase, purpose=purpose)


def test_zero_collectives_are_named_by_what_they_are_for():
    named = with_zero_purposes(
        [
            stats("backward", "all_reduce", 1 << 20),
            stats("backward", "reduce_scatter", 1 << 20),
            stats("optimizer", "all_gather", 1 << 19),
            stats("forward", "all_gather", 1 << 19),
            stats("backward", "all_reduce", 8, "double"),
            stats("backward", "all_reduce", 4, "float"),
            stats("forward", "broadcast", 64),
            stats("backward", "all_gather", 64, purpose="parameter all-gather of FSDP"),
        ]
    )
    assert [s.purpose for s in named] == [
        "gradient reduction",
        "gradient reduction",
        "parameter all-gather",
        "parameter all-gather",
        "norm or overflow flag",
        "norm or overflow flag",
        None,
        "parameter all-gather of FSDP",
    ]


@pytest.mark.slow
@pytest.mark.skipif(NO_DEEPSPEED, reason="deepspeed is not installed (optional: pip install 'commprof[deepspeed]')")
@pytest.mark.parametrize(("stage", "gathered_in"), [(2, "optimizer"), (3, "forward")])
def test_a_zero_script_profiled_unmodified(tmp_path, stage, gathered_in):
    """ZeRO-2 all-gathers the updated parameters inside engine.step, after the inner optimizer's step: the optimizer
    phase of the same step, not the next step's forward. ZeRO-3 (every layer partitioned) gathers them for the
    forward. Every collective is sized and typed, and named by what it is for."""
    args = ["--max-steps", "10", "--schedule", "3,1,4", "--quiet", "--", str(SCRIPT), "--stage", str(stage)]
    result = commprof("run", "--run-id", "zero", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = load_json(tmp_path / "traces" / "zero" / "run.json")
    (built,) = run["deepspeed_built"]
    assert built["zero_stage"] == stage and built["settings"]["reduce_bucket_size"] == 500000
    assert run["ddp_built"] == [] and run["model"] == "Sequential" and run["parameters"] == 265_738
    report = load_report(tmp_path / "reports" / "zero" / "report.json")
    assert all(c.bytes and c.dtype for c in report.collectives), report.collectives
    by_purpose = {(c.phase, c.op, c.purpose) for c in report.collectives}
    assert (gathered_in, "all_gather", "parameter all-gather") in by_purpose
    assert ("backward", "all_reduce", "gradient reduction") in by_purpose
    markdown = (tmp_path / "reports" / "zero" / "report.md").read_text()
    assert f"deepspeed=ZeRO stage {stage}, reduce_bucket_size=500000" in markdown
    assert f"the script trains with DeepSpeed (ZeRO stage {stage})" in markdown


@pytest.mark.parametrize(
    ("argv", "source", "expected"),
    [
        (
            ["t.py", "--stage", "2"],
            'parser.add_argument("--local_rank", type=int)',
            ["t.py", "--stage", "2", "--local_rank=1"],
        ),
        (["t.py"], "parser.add_argument('--local-rank', type=int)", ["t.py", "--local-rank=1"]),
        (["t.py", "--local_rank", "0"], 'add_argument("--local_rank")', ["t.py", "--local_rank", "0"]),  # given
        (["t.py"], "int(os.environ['LOCAL_RANK'])", ["t.py"]),  # not declared: nothing added
    ],
)
def test_a_script_that_declares_local_rank_gets_it(argv, source, expected):
    """As DeepSpeed's launcher passes it (torchrun sets LOCAL_RANK only): the real runs above fail without it."""
    from commprof.worker.script import with_local_rank

    assert with_local_rank(argv, source, "1") == expected
