"""One object per kind of job (commprof/kinds, issue 53): every strategy has its kind, every kind its knobs, and the
commands and the analysis ask the kind instead of testing a setting's type."""

import ast
import dataclasses

import pytest

from commprof.kinds import DDP, DEEPSPEED, FSDP, HOROVOD, KINDS, built_kind, kind_of
from commprof.render.kind_words import words_of
from commprof.results.job import BuiltDDP, BuiltDeepSpeed, BuiltHorovod, Job
from commprof.settings import OPTIONS_OF_STRATEGY, STRATEGIES, DDPOptions, DeepSpeedOptions, HorovodOptions
from tests.conftest import REPO, run_record

OPTION_CLASSES = {cls.__name__ for cls in OPTIONS_OF_STRATEGY.values()}


def test_every_strategy_is_a_kind_with_its_own_knobs():
    assert set(KINDS) == set(STRATEGIES)
    for strategy, kind in KINDS.items():
        assert kind.options is OPTIONS_OF_STRATEGY[strategy]
        assert kind_of(kind.options()) is kind


def test_tunes_size_is_each_kinds_bucket():
    assert (DDP.size_knob, DEEPSPEED.size_knob, HOROVOD.size_knob, FSDP.size_knob) == (
        "bucket_cap_mb",
        "reduce_bucket_size",
        "fusion_threshold_mb",
        None,
    )
    assert DDP.sized(DDPOptions(), 5.0) == DDPOptions(bucket_cap_mb=5.0)
    assert HOROVOD.sized(HorovodOptions(), 8.0) == HorovodOptions(fusion_threshold_mb=8.0)
    assert DEEPSPEED.size({"reduce_bucket_size": 5e5}) == 5e5


def test_the_kind_a_scripts_launch_built():
    record = run_record((1, 1, 2), [[10.0] * 4])
    assert built_kind(record) is DDP  # commprof's own model, described as a script's DDP is
    record = dataclasses.replace(record, script=["train.py"], job=Job())
    assert built_kind(record) is None
    ddp = BuiltDDP("Sequential")
    assert built_kind(record.__class__(**{**vars(record), "job": Job([ddp])})) is DDP
    engine = BuiltDeepSpeed("Sequential", 2)
    assert built_kind(record.__class__(**{**vars(record), "job": Job([engine])})) is DEEPSPEED
    horovod = BuiltHorovod("SGD")
    assert built_kind(record.__class__(**{**vars(record), "job": Job([horovod])})) is HOROVOD


@pytest.mark.parametrize(
    ("kind", "setting", "baseline", "line"),
    [
        (DDP, DDPOptions(bucket_cap_mb=50.0), None, "DDP(model, bucket_cap_mb=50)"),
        (
            DEEPSPEED,
            DeepSpeedOptions(reduce_bucket_size=5e7),
            DeepSpeedOptions(),
            '"zero_optimization": {"reduce_bucket_size": 5e7}  # in the config given to deepspeed.initialize; the rest '
            "as it is",
        ),
        (
            HOROVOD,
            HorovodOptions(fusion_threshold_mb=8.0),
            HorovodOptions(),
            "HOROVOD_FUSION_THRESHOLD=8388608 horovodrun ...  # or export them",
        ),
    ],
)
def test_each_kind_says_its_setting_in_its_users_terms(kind, setting, baseline, line):
    assert words_of(kind).paste(setting, baseline=baseline) == line


def test_no_command_or_analysis_tests_a_settings_type():
    """isinstance(x, DDPOptions) and its kin belong to the kinds (an assert that narrows a kind's own is theirs)."""
    found = []
    for folder in ("commands", "analysis", "cli", "render"):
        for path in (REPO / "commprof" / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                    names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                    if names & OPTION_CLASSES:
                        found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, found
