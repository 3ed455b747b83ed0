"""A script's models and their settings in words, made in render/ from facts built by hand: the header's list of a
script's models (render/models_view.py), a bucket layout and the line to paste for each kind (render/kind_words.py),
what a setting is set on in a script of several models or kinds (render/job_text.py), and what a report says of
torch.compile (render/compiled_text.py). The tests that decide these facts check the facts alone."""

from commprof.config import RunConfig
from commprof.kinds import DDP, DEEPSPEED, FSDP
from commprof.kinds.ddp_buckets import MB
from commprof.render.compiled_text import compiled_line, model_name
from commprof.render.job_text import kinds_text, models_text
from commprof.render.kind_words import cap_label, describe, words_of
from commprof.render.models_view import models_named
from commprof.results.job import BuiltDDP, BuiltFSDP, Job
from commprof.results.report import ModelAccount, Report
from commprof.results.run_record import Compiled, RunRecord
from commprof.results.whole_run import WholeRun
from commprof.settings import DDPOptions, DeepSpeedOptions, FSDPOptions

MIB = 2**20


def models_report(*models: ModelAccount) -> Report:
    return Report("g", "run", "now", [], [], [], models=list(models))


def test_the_header_names_each_model_with_its_module_and_parameters():
    generator = ModelAccount("generator", "Sequential", 524_288, bucket_cap_mb=4.0, buckets=[2 * MIB])
    discriminator = ModelAccount("discriminator", "Sequential", 131_072, bucket_cap_mb=0.1, buckets=[MIB // 4] * 2)
    assert models_named(models_report(generator, discriminator)) == (
        "2 DDP models, generator (Sequential, 524,288 parameters) and discriminator (Sequential, 131,072 parameters)"
    )
    teacher = ModelAccount("teacher", "Sequential", 68_362, kind="FSDP", units=[65_792, 2_570])
    student = ModelAccount("student", "Sequential", 17_098, kind="FSDP", units=[16_448, 650])
    assert models_named(models_report(teacher, student)) == (
        "2 FSDP models, teacher (Sequential, 68,362 parameters) and student (Sequential, 17,098 parameters)"
    )
    assert models_named(models_report(generator)) == ""  # one model: the header names it as the run's model


def test_a_layout_is_described_with_the_digits_that_tell_its_sizes_apart():
    """tests/data/scripts/train_default_ddp.py's buckets at DDP's default and at bucket_cap_mb=1 (a decimal more where
    one would read two different sizes alike), a layout of more buckets than are listed one by one, and the layouts
    of four 8 MiB layers at caps 10 and 25 (test_ddp_buckets.py, test_sizes_read_apart.py: the sizes themselves)."""
    assert describe([1_062_952, 2_105_344]) == "2 buckets: 1.0, 2.0 MiB"
    assert describe([1_062_952, 1_052_672, 1_052_672]) == "3 buckets: 1.01, 1.00, 1.00 MiB"
    assert describe([MB // 4] * 63 + [4 * MB]) == "64 buckets of 0.2 to 4.0 MiB"
    assert describe((16 * MB, 16 * MB)) == "2 buckets: 16.0, 16.0 MiB"
    assert describe((32 * MB,)) == "one bucket of 32.0 MiB"
    assert cap_label(None).startswith("DDP's default") and cap_label(10) == "bucket_cap_mb=10"


def test_a_layout_of_several_ddp_models_names_each_ones_buckets():
    generator = BuiltDDP("Sequential", name="generator", parameter_sizes=[MIB, MIB])
    discriminator = BuiltDDP("Sequential", name="discriminator", parameter_sizes=[MIB // 4, MIB // 4])
    run = RunRecord("t", RunConfig(run_id="t"), job=Job([generator, discriminator]))
    described = words_of(DDP).layout(run)
    assert described(((MIB, MIB), (MIB // 2,))) == (
        "generator's 2 buckets: 1.0, 1.0 MiB; discriminator's one bucket of 0.5 MiB"
    )


def test_a_ddp_setting_is_pasted_for_the_model_it_is_for():
    # "#" would start a comment in the call: the script's second DDP of `tower` is written as the script wrote it
    assert words_of(DDP).paste(DDPOptions(bucket_cap_mb=1, ddp_model="tower#2")) == (
        "DDP(tower, bucket_cap_mb=1)  # the DDP the report names tower#2"
    )


def test_fsdps_options_are_pasted_as_fully_shard_and_each_blocks_prefetch():
    options = FSDPOptions(reshard_after_forward=False, forward_prefetch=2, backward_prefetch=3, reduce_dtype="fp16")
    assert words_of(FSDP).paste(options) == (
        "fully_shard(each block, then the model, reshard_after_forward=False, "
        "mp_policy=MixedPrecisionPolicy(reduce_dtype=torch.float16)); "
        "blocks[i].set_modules_to_forward_prefetch(blocks[i + 1:i + 3]); "
        "blocks[i].set_modules_to_backward_prefetch(blocks[max(0, i - 3):i][::-1])"
    )
    assert words_of(FSDP).paste(FSDPOptions(forward_prefetch=1)) == (
        "fully_shard(each block, then the model); blocks[i].set_modules_to_forward_prefetch(blocks[i + 1:i + 2])"
    )
    assert words_of(FSDP).paste(FSDPOptions(reshard_after_forward=None, reduce_dtype="bf16")) == (
        "fully_shard(each block, then the model, mp_policy=MixedPrecisionPolicy(reduce_dtype=torch.bfloat16))"
    )


def test_a_deepspeed_setting_is_pasted_as_what_differs_from_the_scripts_config():
    ran = DeepSpeedOptions(zero_stage=2, reduce_bucket_size=5e6, allgather_bucket_size=5e5, overlap_comm=True)
    own = DeepSpeedOptions(zero_stage=2, reduce_bucket_size=5e5, allgather_bucket_size=5e5, overlap_comm=True)
    assert words_of(DEEPSPEED).paste(ran, baseline=own) == (
        '"zero_optimization": {"reduce_bucket_size": 5e6}  # in the config given to deepspeed.initialize; the rest '
        "as it is"
    )


def test_what_a_setting_is_set_on_in_a_script_of_several_ddp_models():
    names = ["generator", "discriminator"]
    assert models_text(names, None) == (
        "the script builds 2 DDP models (generator, discriminator): each setting is set on every one at once "
        "(--ddp-model NAME sets one alone)"
    )
    assert models_text(names, "discriminator") == (
        "the script builds 2 DDP models: each setting is set on discriminator alone (generator as written)"
    )


def test_what_the_settings_vary_in_a_script_of_two_kinds():
    """tests/data/two-kinds' job: a DDP head, then an FSDP encoder."""
    job = Job([BuiltDDP("Sequential", name="head"), BuiltFSDP("Sequential", name="encoder")])
    assert kinds_text(job, DDP) == (
        "the script builds models of 2 kinds, head (DDP), encoder (FSDP): these settings vary DDP's options "
        "(bucket_cap_mb and the others) on head; FSDP's options as written (--strategy fsdp varies them)"
    )
    assert kinds_text(job, FSDP) == (
        "the script builds models of 2 kinds, head (DDP), encoder (FSDP): these settings vary FSDP's options on "
        "encoder; DDP's options (bucket_cap_mb and the others) as written (--strategy ddp varies them)"
    )


COMPILED = Compiled(
    "Sequential", "inductor", None, [1, 2, 31], graphs=[[1_050_624, 7_354_368]], bucket_cap_bytes=26_214_400
)


def test_the_report_names_the_compile_the_split_and_the_steps():
    """test_compiled.py: the compile steps' time, 9,020 + 420.2 + 620 ms, left out of the whole run's figures."""
    assert model_name("Sequential", 124_439_808, COMPILED) == (
        "Sequential (124,439,808 parameters, compiled: torch.compile, inductor)"
    )
    assert model_name("GPT", 10, None) == "GPT (10 parameters)"
    # a function of the script's (or a library's) compiled, not the model: the model is not called compiled
    function = Compiled("zeropower_via_newtonschulz5", "inductor", steps=[1])
    assert model_name("Sequential", 10, function) == "Sequential (10 parameters)"
    whole = WholeRun("", [0, 1], 60, 1, 20.0, 5.0, 30.0, 0, compiled_steps=[1, 2, 31], compiled_ms=10_060.2)
    assert compiled_line(COMPILED, whole, built_ddp=True) == (
        "torch.compile compiled Sequential with the inductor backend; Dynamo split its graph at DDP's buckets "
        "(DDPOptimizer, at DDP's bucket cap of 25.00 MiB) into 2 parts (1.002 MiB, 7.014 MiB, the last layers first), "
        "so that each bucket's all-reduce can start while the backward goes on; it compiled in steps 1, 2 and 31, "
        "10.1 s; left out of the whole run's figures and the profiler's cost."
    )
    unsplit = Compiled("DistributedDataParallel(GPT)", "aot_eager", "max-autotune", [1])
    assert compiled_line(unsplit, None, built_ddp=True) == (
        "torch.compile compiled DistributedDataParallel(GPT) with the aot_eager backend; Dynamo did not split its "
        "graph at DDP's buckets (torch._dynamo.config.optimize_ddp is off, or no graph was compiled while DDP's "
        "forward ran, as when DDP itself is compiled: compile the model, then wrap it in DDP): every all-reduce waits "
        "for the whole compiled backward; it compiled in step 1."
    )
