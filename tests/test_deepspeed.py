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
from tests.conftest import REPO, built_of, commprof_here, load_json

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


FAKE_CONFIG = '''
class DeepSpeedConfig:
    """DeepSpeed's config as far as commprof sets it: the dict it was given, or its file read."""

    def __init__(self, config, mpu=None):
        self.config = config
'''


@pytest.mark.skipif(
    importlib.util.find_spec("hjson") is None,
    reason="hjson, DeepSpeed's config reader, is not installed (optional: pip install 'commprof[deepspeed]')",
)
def test_zero_options_are_set_in_every_config_the_script_gives_deepspeed(tmp_path, monkeypatch):
    """With ZeRO's options given (a sweep's setting), the config class gets them in its zero_optimization section,
    whether the script gives a dict (left unchanged) or its JSON file (read as DeepSpeed reads it, with comments);
    the engine's record says which entries commprof set."""
    import torch

    package = tmp_path / "deepspeed" / "runtime"
    package.mkdir(parents=True)
    for folder in (tmp_path / "deepspeed", package):
        (folder / "__init__.py").write_text("")
    (package / "config.py").write_text(FAKE_CONFIG)
    (package / "engine.py").write_text("from deepspeed.runtime.config import DeepSpeedConfig\n" + FAKE_ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("deepspeed", "deepspeed.runtime", "deepspeed.runtime.engine", "deepspeed.runtime.config"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    watch = DeepSpeedWatch(lambda: None, {"reduce_bucket_size": 2000, "overlap_comm": False})
    watch.install()
    from deepspeed.runtime.config import DeepSpeedConfig
    from deepspeed.runtime.engine import DeepSpeedEngine

    own = {"train_batch_size": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e5, "overlap_comm": True}}
    given = DeepSpeedConfig(own).config
    assert given["zero_optimization"] == {"stage": 2, "reduce_bucket_size": 2000, "overlap_comm": False}
    assert given["train_batch_size"] == 8 and own["zero_optimization"]["reduce_bucket_size"] == 5e5
    file = tmp_path / "ds.json"
    file.write_text('{\n  // as DeepSpeed reads it\n  "zero_optimization": {"stage": 1}\n}\n')
    from_file = DeepSpeedConfig(str(file)).config
    assert from_file == {"zero_optimization": {"stage": 1, "reduce_bucket_size": 2000, "overlap_comm": False}}
    DeepSpeedEngine(torch.nn.Linear(4, 2))
    assert watch.built[0].applied == {"reduce_bucket_size": 2000, "overlap_comm": False}


def test_zero_settings_are_named_swept_and_pasted_as_deepspeed_writes_them():
    """A setting's label, what it sets and a sweep's grid ("own": the script's config). The config lines to paste,
    only what differs from the script's own as JSON writes it: test_render_model_words.py."""
    from commprof.errors import UsageError
    from commprof.plans import sweep_grid
    from commprof.settings import DeepSpeedOptions, setting_label

    setting = DeepSpeedOptions(zero_stage=3, reduce_bucket_size=2.5e5, overlap_comm=False)
    assert setting_label(setting) == "stage-3_reduce-2.5e5_no-overlap"
    assert setting_label(DeepSpeedOptions()) == "script-own"
    assert setting_label(DeepSpeedOptions(reduce_bucket_size=5e8, allgather_bucket_size=1500)) == (
        "reduce-5e8_allgather-1500"
    )
    assert setting.zero_config() == {"stage": 3, "reduce_bucket_size": 250000, "overlap_comm": False}
    grid = sweep_grid("deepspeed", {"reduce_bucket_size": "own,1e6", "overlap_comm": "true,false"})
    assert grid == {
        "zero_stage": [None],
        "reduce_bucket_size": [None, 1e6],
        "allgather_bucket_size": [None],
        "overlap_comm": [True, False],
    }
    with pytest.raises(UsageError, match="--bucket-cap-mb: not swept with --strategy deepspeed"):
        sweep_grid("deepspeed", {"bucket_cap_mb": "1,5"})
    with pytest.raises(UsageError, match="--zero-stage must be one of 0, 1, 2, 3, got 4"):
        DeepSpeedOptions(zero_stage=4)


def test_tune_refines_zeros_reduce_bucket_size_around_the_best(tmp_path):
    """tune --strategy deepspeed: after the coarse round, the geometric midpoints around the fastest size (ZeRO's
    buckets are not modelled, so no size is left out for building another's buckets); none when all is noise."""
    from commprof.commands.outcome import SILENT
    from commprof.commands.script_sweep import _Launches
    from commprof.config import RunConfig
    from commprof.plans import SweepPlan
    from commprof.results.sweep_record import MeasuredSetting
    from commprof.settings import DeepSpeedOptions

    config = RunConfig(run_id="t", script=("train.py",), strategy="deepspeed", traces_dir=tmp_path)
    sizes = (5e5, 5e6, 5e7)
    settings = (DeepSpeedOptions(), *(DeepSpeedOptions(reduce_bucket_size=size) for size in sizes))
    plan = SweepPlan(run=config, settings=settings, baseline=DeepSpeedOptions(), tune=True)
    launches = _Launches(config, plan, (), SILENT, "tune t", 8, 8, tune=True)

    def measured(size, step):  # four launches a setting, paired by round, each 3 steps a little apart
        launches = [[step + d, step + d + 0.1, step + d - 0.1] for d in (0, 0.2, -0.2, 0.1)]
        steps = [ms for launch in launches for ms in launch]
        return MeasuredSetting(
            {"zero_stage": 2, "reduce_bucket_size": size}, steps, launches=launches, rounds=list("1234")
        )

    results = {"script-own": measured(5000, 30.0)}
    results |= {
        f"reduce-{label}": measured(size, step)
        for label, size, step in zip(("5e5", "5e6", "5e7"), sizes, (20.0, 10.0, 20.0), strict=True)
    }
    refined = launches.refine(results, 0)
    assert [s.reduce_bucket_size for s in refined] == [1.6e6, 1.6e7]
    assert all(s.zero_stage is None and s.overlap_comm is None for s in refined)
    noise = {label: measured(m.options["reduce_bucket_size"], 10.0) for label, m in results.items()}
    assert launches.refine(noise, 0) == []


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
def test_a_zero3_script_profiled_unmodified(tmp_path):
    """ZeRO-3 (every layer partitioned) gathers the parameters for the forward (ZeRO-2's, in its optimizer phase: the
    sweep below). Every collective is sized and typed, and named by what it is for."""
    stage, gathered_in = 3, "forward"
    args = ["--max-steps", "10", "--schedule", "3,1,4", "--quiet", "--", str(SCRIPT), "--stage", str(stage)]
    result = commprof_here("run", "--run-id", "zero", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = load_json(tmp_path / "traces" / "zero" / "run.json")
    (built,) = built_of(run, "deepspeed")
    assert built["zero_stage"] == stage and built["settings"]["reduce_bucket_size"] == 500000
    assert built_of(run, "ddp") == [] and run["model"] == "Sequential" and run["parameters"] == 265_738
    report = load_report(tmp_path / "reports" / "zero" / "report.json")
    assert all(c.bytes and c.dtype for c in report.collectives), report.collectives
    by_purpose = {(c.phase, c.op, c.purpose) for c in report.collectives}
    assert (gathered_in, "all_gather", "parameter all-gather") in by_purpose
    assert ("backward", "all_reduce", "gradient reduction") in by_purpose
    markdown = (tmp_path / "reports" / "zero" / "report.md").read_text()
    assert f"deepspeed=ZeRO stage {stage}, reduce_bucket_size=500000" in markdown
    assert report.run.script_notes.deepspeed_stage == stage
    assert f"(ZeRO stage {stage})" in markdown


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


def test_zero_fills_buckets_with_whole_gradients_until_the_next_would_not_fit():
    """ZeRO's rule, on the measured buckets (bytes, ready fraction): merged in order, never split; a bucket is ready
    when its last part was."""
    from commprof.analysis.zero_findings import merged

    measured = [(400, 0.1), (400, 0.3), (100, 0.5), (900, 0.8), (50, 1.0)]
    assert merged(measured, 1000) == [(900, 0.5), (950, 1.0)]  # 400+400+100; then 900+50
    assert merged(measured, 1e9) == [(1850, 1.0)]
    assert merged(measured, 300) == measured  # each alone: a bucket larger than the size is reduced by itself
