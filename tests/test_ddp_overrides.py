"""The DDP options given on the command line reach every DistributedDataParallel a script builds, however it
imported the class and however it passed its own arguments (one in-process rank, an in-memory store)."""

import inspect

import msgspec
import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as ImportedEarly

from commprof.instrument.ddp import TIMED, DDPOverrides
from commprof.render.kind_words import words_of
from commprof.settings import DDPOptions
from commprof.worker.step_ledger import DDP_TIMERS, HOST_CLOCK, StepLedger


@pytest.fixture
def one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.filterwarnings("ignore:`broadcast_buffers` is deprecated:FutureWarning")  # passed positionally here
def test_options_that_differ_from_ddp_defaults_are_applied_and_recorded(one_rank):
    overrides = DDPOverrides(DDPOptions(bucket_cap_mb=0.5, gradient_as_bucket_view=True, comm_hook="fp16"))
    overrides.install()
    try:
        # bucket_cap_mb passed positionally, as the eighth argument of DDP's signature
        ddp = ImportedEarly(nn.Linear(8, 4), None, None, 0, True, True, None, 10.0, find_unused_parameters=True)
        BUILT_AT = inspect.currentframe().f_lineno - 1  # the line above  # noqa: N806
    finally:
        overrides.uninstall()
    assert ddp.bucket_bytes_cap == int(0.5 * 2**20) and ddp.gradient_as_bucket_view and ddp.find_unused_parameters
    (built,) = overrides.built
    assert msgspec.structs.asdict(built) == {
        "module": "Linear",
        "built_by": "script",
        "parameters": 36,
        "parameter_sizes": [128, 16],
        "asked": {
            "bucket_cap_mb": 10.0,
            "find_unused_parameters": True,
            "gradient_as_bucket_view": False,
            "static_graph": False,
        },
        "applied": {"bucket_cap_mb": 0.5, "gradient_as_bucket_view": True, "comm_hook": "fp16"},
        "name": "ddp",  # what it passes is not a name: what the call is assigned to names it
        "built_at": f"test_ddp_overrides.py:{BUILT_AT}",
        "groups": ["0"],  # the default group, by its name
    }
    assert overrides.logging_data()["bucket_sizes"]  # DDP's own logging data, from the instance it built
    untouched = ImportedEarly(nn.Linear(8, 4), bucket_cap_mb=10.0)
    assert untouched.bucket_bytes_cap == int(10 * 2**20)  # uninstalled: DDP as it was


def test_a_setting_for_one_of_two_models_is_set_on_that_one_alone(one_rank):
    """Issue 63: --ddp-model discriminator sets the cap on the DDP built around `discriminator`; the generator's stays
    as the script wrote it. Each is named by what the script passes, and an optimizer by whose parameters it holds."""
    generator, discriminator = nn.Linear(8, 4), nn.Linear(4, 1)
    overrides = DDPOverrides(DDPOptions(bucket_cap_mb=0.5, ddp_model="discriminator"))
    overrides.install()
    try:
        gen = ImportedEarly(generator, bucket_cap_mb=4.0)
        disc = ImportedEarly(discriminator, bucket_cap_mb=1.0)
    finally:
        overrides.uninstall()
    assert gen.bucket_bytes_cap == 4 * 2**20 and disc.bucket_bytes_cap == int(0.5 * 2**20)
    assert [(b.name, b.applied) for b in overrides.built] == [
        ("generator", {}),
        ("discriminator", {"bucket_cap_mb": 0.5}),
    ]
    assert overrides.logging_data()["bucket_sizes"] == "20"  # the discriminator's own (5 floats), not the generator's
    assert overrides.optimizer_name(torch.optim.Adam(disc.parameters())) == "discriminator's Adam"
    assert overrides.optimizer_name(torch.optim.SGD(generator.parameters())) == "generator's SGD"
    # advise's setting for the discriminator of a run that capped both: the generator keeps the run's cap
    overrides = DDPOverrides(DDPOptions(bucket_cap_mb=0.5, ddp_model="discriminator", others_bucket_cap_mb=2.0))
    overrides.install()
    try:
        gen = ImportedEarly(generator, bucket_cap_mb=4.0)
        disc = ImportedEarly(discriminator, bucket_cap_mb=1.0)
    finally:
        overrides.uninstall()
    assert gen.bucket_bytes_cap == 2 * 2**20 and disc.bucket_bytes_cap == int(0.5 * 2**20)
    assert [b.applied for b in overrides.built] == [{"bucket_cap_mb": 2.0}, {"bucket_cap_mb": 0.5}]


def test_a_scripts_fully_shard_is_recorded_and_given_fsdps_options(one_rank):
    """Issue 63: a script's own fully_shard calls (each block, then the model) recorded as one model by its root, its
    units in order with the parameters each holds, and --no-reshard-after-forward set on each call."""
    from torch.distributed.fsdp import fully_shard

    from commprof.instrument.fsdp_script import FSDPOverrides
    from commprof.settings import FSDPOptions

    overrides = FSDPOverrides(FSDPOptions(reshard_after_forward=False, backward_prefetch=2))
    overrides.install()
    try:
        import torch.distributed.fsdp as fsdp

        assert fsdp.fully_shard.state is fully_shard.state  # contract's, which pipelining calls, kept
        model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 2))
        for block in model[:2]:
            fsdp.fully_shard(block)
        fsdp.fully_shard(model)
        model(torch.randn(2, 8)).sum().backward()  # its first forward sets the prefetch on the blocks
    finally:
        overrides.uninstall()
    assert fsdp.fully_shard is fully_shard  # uninstalled: FSDP as it was
    (built,) = overrides.built()
    assert (built.module, built.name, built.parameters) == ("Sequential", "model", 72 + 72 + 18)
    assert built.units == ["Linear", "Linear", "Sequential"] and built.unit_parameters == [72, 72, 18]
    assert built.unit_shard_elements == [72, 72, 18]  # one rank: each shard whole, no padding
    assert built.groups == ["0"]  # the process group its mesh talks over: the default group, by its name
    assert built.applied == {"reshard_after_forward": False, "backward_prefetch": 2}
    assert built.asked == {"reshard_after_forward": None, "reduce_dtype": "fp32"}
    assert model[0]._get_fsdp_state()._fsdp_param_group.post_forward_mesh_info is None  # not resharded after forward
    assert model[1]._get_fsdp_state()._states_to_backward_prefetch == [model[0]._get_fsdp_state()]


def test_nothing_given_changes_nothing(one_rank):
    overrides = DDPOverrides(DDPOptions())
    overrides.install()
    try:
        ddp = nn.parallel.DistributedDataParallel(nn.Linear(8, 4), bucket_cap_mb=3.0)
    finally:
        overrides.uninstall()
    assert ddp.bucket_bytes_cap == int(3 * 2**20) and overrides.built[0].applied == {}


def test_a_scripts_own_setting_applies_nothing_and_keeps_ddps_1mb_first_bucket(one_rank):
    """The baseline of a script's sweep (no bucket_cap_mb) leaves DDP(model) as written: DDP's default buckets, a
    first one of 1 MiB and then 25 MiB (tests/data/scripts/train_default_ddp.py's model); an explicit 25, the old
    baseline, builds one bucket instead."""
    import importlib.util

    import torch

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("train_default_ddp", REPO / "tests/data/scripts/train_default_ddp.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    built = {}
    for label, options, forced in (
        ("own", DDPOptions(bucket_cap_mb=None), ()),
        ("25", DDPOptions(bucket_cap_mb=25.0), ("bucket_cap_mb",)),
    ):
        overrides = DDPOverrides(options, forced)
        overrides.install()
        try:
            ddp = nn.parallel.DistributedDataParallel(script.build_model(256, 12))
        finally:
            overrides.uninstall()
        for _ in range(3):  # DDP rebuilds its buckets after the first step; its logging data has them from the third
            ddp(torch.randn(4, 256)).sum().backward()
        built[label] = (overrides.built[0].asked["bucket_cap_mb"], overrides.built[0].applied, overrides.logging_data())
    assert built["own"][:2] == (None, {}) and built["25"][:2] == (None, {"bucket_cap_mb": 25.0})
    assert built["own"][2]["rebuilt_bucket_sizes"] == "1062952, 2105344"
    assert built["25"][2]["rebuilt_bucket_sizes"] == "3168296"


def test_the_recommendation_speaks_the_framework_that_built_the_ddp():
    from commprof.instrument.ddp import framework_of
    from commprof.kinds import DDP

    def frame_in(module_name):
        namespace = {"__name__": module_name, "sys": __import__("sys")}
        exec("def where():\n    return sys._getframe()", namespace)
        return namespace["where"]()

    assert [
        framework_of(frame_in(m))
        for m in ("transformers.trainer", "accelerate.accelerator", "lightning.pytorch.strategies.ddp", "train")
    ] == ["transformers", "transformers", "lightning", "script"]
    best = DDPOptions(bucket_cap_mb=50, comm_hook="bf16")
    assert words_of(DDP).paste(best, "script") == (
        "DDP(model, bucket_cap_mb=50); ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)"
    )
    assert (
        words_of(DDP).paste(best, "lightning")
        == "DDPStrategy(bucket_cap_mb=50, ddp_comm_hook=default_hooks.bf16_compress_hook)"
    )
    assert (
        words_of(DDP).paste(DDPOptions(bucket_cap_mb=50), "transformers")
        == "TrainingArguments(..., ddp_bucket_cap_mb=50)"
    )


def _train_once(ddp) -> None:
    ddp(torch.randn(2, 8)).sum().backward()


@pytest.mark.parametrize("registered", ["before the first forward", "after it"])
def test_a_script_s_own_hook_is_timed_inside_commprof_s_whenever_it_registers_it(one_rank, tmp_path, registered):
    """The whole-run record times DDP's all-reduces through a comm hook where the script has one, whenever it
    registers it (DDP allows one registration): the script's hook runs inside the timed one."""
    ledger = StepLedger(tmp_path, 0, "vm", use_cuda=False, window=None)
    overrides = DDPOverrides(DDPOptions())
    overrides.timing = ledger
    called = []

    def own_hook(state, bucket):
        called.append(state)
        return default_hooks.allreduce_hook(None, bucket)

    overrides.install()
    try:
        ddp = nn.parallel.DistributedDataParallel(nn.Linear(8, 4))
        if registered == "before the first forward":
            ddp.register_comm_hook("mine", own_hook)
        _train_once(ddp)
        if registered == "after it":
            ddp.register_comm_hook("mine", own_hook)
            _train_once(ddp)
    finally:
        overrides.uninstall()
    ledger.step_ended()
    (step,) = ledger.builder.ledger().recent
    assert ledger.builder.timed_by == HOST_CLOCK
    assert [c.bytes for c in step.calls] == [(32 + 4) * 4]  # the hook's one bucket, timed
    assert called == ["mine"]


def test_ddp_s_own_all_reduce_on_cpu_is_read_from_its_own_timers(one_rank, tmp_path):
    """No hook of the script's: no Python hook takes the place of DDP's C++ all-reduce (it would cost a pass over the
    gradients); each step's span, first bucket's launch to last one's completion, comes from DDP's own timers."""
    ledger = StepLedger(tmp_path, 0, "vm", use_cuda=False, window=None)
    overrides = DDPOverrides(DDPOptions())
    overrides.timing = ledger
    overrides.install()
    try:
        ddp = nn.parallel.DistributedDataParallel(nn.Linear(8, 4))
        for _ in range(3):
            ledger.step_started()
            _train_once(ddp)
            ledger.step_ended()
    finally:
        overrides.uninstall()
    ledger.finish()  # the last step's span: taken as DDP's next forward would
    assert getattr(ddp, TIMED, None) is None and "comm_hook" not in ddp._get_ddp_logging_data()  # no hook
    recorded = ledger.builder.ledger()
    assert recorded.timed_by == DDP_TIMERS and recorded.steps == 3
    for step in recorded.recent:
        (span,) = step.calls
        assert span.op == "all_reduce" and span.bytes == (32 + 4) * 4
        assert 0 <= span.start_ms and span.start_ms + span.duration_ms <= step.step_ms
