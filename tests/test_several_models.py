"""Every model in a script (issue 63): each DDP a script builds named by what it passes to DDP, its all-reduces
told from the others' by their size (hand-built traces, every number checked by eye), its settings and findings its
own; FSDP's resharding predicted from the backward's all-gathers; the words of each kind."""

import dataclasses
import textwrap

import msgspec

from commprof.analysis.evidence import Evidence
from commprof.analysis.finding_kinds import checked
from commprof.analysis.fsdp_findings import fsdp_options, resharding
from commprof.analysis.models import model_accounts
from commprof.instrument.call_site import _first_argument, unique
from commprof.kinds import DDP, FSDP
from commprof.render.kind_words import words_of
from commprof.render.models_view import models_named, models_section
from commprof.render.outputs import markdown
from commprof.results.job import BuiltDDP, BuiltFSDP, Job
from commprof.results.report import Report
from commprof.settings import DDPOptions, FSDPOptions, applied_to_a_script, fsdp_as_written
from commprof.trace.model import Collective, RankTrace, Step
from tests.conftest import run_summary

MIB = 2**20
# the generator: two parameters of 1 MiB (one bucket of 2 MiB at cap 4); the discriminator: two of 0.25 MiB at cap
# 0.1 (each its own bucket: a parameter larger than the cap is a bucket of its own)
GENERATOR = BuiltDDP(
    "Sequential",
    name="generator",
    built_at="gan.py:20",
    parameters=2 * MIB // 4,
    parameter_sizes=[MIB, MIB],
    asked={"bucket_cap_mb": 4},
)
DISCRIMINATOR = BuiltDDP(
    "Sequential",
    name="discriminator",
    built_at="gan.py:21",
    parameters=MIB // 8,
    parameter_sizes=[MIB // 4, MIB // 4],
    asked={"bucket_cap_mb": 0.1},
)
GAN = run_summary(script=["gan.py"], job=Job([GENERATOR, DISCRIMINATOR]))


def _rank(collectives, steps=2, kind="cpu"):
    """Steps of 100 ms (times in us); `collectives`: (op, bytes, start, duration, phase, purpose) in each step."""
    calls = tuple(
        Collective(
            op,
            "gloo",
            k * 100_000 + start,
            k * 100_000 + start + took,
            nbytes,
            "float",
            2,
            phase=phase,
            purpose=purpose,
        )
        for k in range(steps)
        for op, nbytes, start, took, phase, purpose in collectives
    )
    windows = [Step(f"ProfilerStep#{k}", k * 100_000, (k + 1) * 100_000) for k in range(steps)]
    rank = RankTrace("r0", 0, 2, "gloo", kind, 0.0, tuple(windows), (), (), (), calls)
    return rank, windows


def test_each_ddp_gets_the_all_reduces_of_its_own_bucket_sizes():
    # per step: the generator's 2 MiB bucket once (8 ms), the discriminator's two 0.25 MiB buckets twice (its
    # backward runs in both of the GAN's passes: 4 calls of 3 ms), and a 1-element all-reduce of the script's own
    rank = _rank(
        [("all_reduce", 2 * MIB, 10_000, 8_000, "backward", None)]
        + [("all_reduce", MIB // 4, 30_000 + 5_000 * i, 3_000, "backward", None) for i in range(4)]
        + [("all_reduce", 4, 90_000, 1_000, "optimizer", None)]
    )
    generator, discriminator = model_accounts(GAN, [rank])
    assert (generator.name, generator.bucket_cap_mb, generator.buckets) == ("generator", 4.0, [2 * MIB])
    assert (generator.calls_per_step, generator.ms_per_step, generator.bytes_per_step) == (1.0, 8.0, 2 * MIB)
    assert (discriminator.name, discriminator.bucket_cap_mb, discriminator.buckets) == (
        "discriminator",
        0.1,
        [MIB // 4, MIB // 4],
    )
    assert (discriminator.calls_per_step, discriminator.ms_per_step) == (4.0, 12.0)
    assert discriminator.shared_calls_per_step == 0.0


def test_a_size_two_models_share_is_counted_to_neither():
    twin = msgspec.structs.replace(DISCRIMINATOR, name="critic", parameter_sizes=[2 * MIB], asked={"bucket_cap_mb": 4})
    run = run_summary(script=["gan.py"], job=Job([GENERATOR, twin]))
    accounts = model_accounts(run, [_rank([("all_reduce", 2 * MIB, 10_000, 8_000, "backward", None)])])
    assert [(a.calls_per_step, a.shared_calls_per_step) for a in accounts] == [(0.0, 1.0), (0.0, 1.0)]


def test_a_built_in_run_or_one_without_ddp_has_no_accounts():
    rank = _rank([("all_reduce", 2 * MIB, 10_000, 8_000, "backward", None)])
    assert model_accounts(run_summary(), [rank]) == []
    assert model_accounts(None, [rank]) == []


def test_the_report_names_each_model_with_its_own_cap():
    rank = _rank([("all_reduce", 2 * MIB, 10_000, 8_000, "backward", None)])
    report = Report("g", "run", "now", [], [], [], run=GAN, models=model_accounts(GAN, [rank]))
    # the header's list of them: each its name, module and parameters (their words: test_render_model_words.py)
    assert [(m.name, m.kind, m.module, m.parameters) for m in report.models] == [
        ("generator", "DDP", "Sequential", 524_288),
        ("discriminator", "DDP", "Sequential", 131_072),
    ]
    table = models_section(report)[0].blocks[1]
    assert [row[:7] for row in table.rows] == [
        ("generator", "DDP", "Sequential", "524,288", "gan.py:20", "bucket_cap_mb=4", "one bucket of 2.0 MiB"),
        ("discriminator", "DDP", "Sequential", "131,072", "gan.py:21", "bucket_cap_mb=0.1", "2 buckets: 0.2, 0.2 MiB"),
    ]
    assert GAN.settings(with_defaults=False) == {
        "script": "gan.py",
        "generator.bucket_cap_mb": "4",
        "discriminator.bucket_cap_mb": "0.1",
    }
    page = markdown(report)
    assert "discriminator.bucket_cap_mb=0.1" in page and models_named(report) in page
    single = dataclasses.replace(report, models=report.models[:1])
    assert models_named(single) == "" and models_section(single) == []


def test_each_fsdp_root_gets_the_gathers_and_reduce_scatters_of_its_units():
    """A teacher (units of 65,792 and 2,570 parameters) and a student (16,448 and 650) on 2 ranks: an all-gather moves
    a unit's shard (half its parameters' bytes), a reduce-scatter its whole gradient (Gloo: an all-reduce of it). The
    sizes are those of tests/data/scripts/train_fsdp_two.py's trace, the shards padded as FSDP pads them."""
    teacher = BuiltFSDP(
        "Sequential",
        name="teacher",
        parameters=68_362,
        units=["Sequential", "Sequential"],
        unit_parameters=[65_792, 2_570],
        asked={"reshard_after_forward": None, "reduce_dtype": "fp32"},
    )
    student = BuiltFSDP(
        "Sequential",
        name="student",
        parameters=17_098,
        units=["Sequential", "Sequential"],
        unit_parameters=[16_448, 650],
        asked={"reshard_after_forward": None, "reduce_dtype": "fp32"},
        applied={"reshard_after_forward": False},
    )
    run = dataclasses.replace(run_summary(script=["two.py"]), job=Job([teacher, student]), world_size=2)
    gather, scatter = "parameter all-gather", "gradient reduce-scatter"
    rank = _rank(
        [
            ("all_gather", 131_584, 1_000, 2_000, "forward", gather),  # the teacher's block: 2 ms
            ("all_gather", 5_140, 4_000, 1_000, "forward", gather),  # its root: 1 ms
            ("all_gather", 32_896, 6_000, 1_500, "forward", gather),  # the student's block
            ("all_gather", 1_300, 8_000, 500, "forward", gather),  # its root
            ("all_reduce", 263_168, 50_000, 4_000, "backward", scatter),  # the teacher's block's gradients
            ("all_reduce", 65_792, 60_000, 3_000, "backward", scatter),  # the student's block's
            ("all_reduce", 4, 90_000, 1_000, "optimizer", None),  # the script's own: neither's
        ]
    )
    teacher_account, student_account = model_accounts(run, [rank])
    assert (teacher_account.kind, teacher_account.calls_per_step, teacher_account.ms_per_step) == ("FSDP", 3.0, 7.0)
    assert teacher_account.bytes_per_step == 131_584 + 5_140 + 263_168
    assert (student_account.calls_per_step, student_account.ms_per_step) == (3.0, 5.0)
    report = Report("t", "run", "now", [], [], [], run=run, models=[teacher_account, student_account])
    assert [(m.name, m.kind, m.module, m.parameters) for m in report.models] == [
        ("teacher", "FSDP", "Sequential", 68_362),
        ("student", "FSDP", "Sequential", 17_098),
    ]
    assert models_named(report) in markdown(report)  # the header names them (its words: test_render_model_words)
    rows = models_section(report)[0].blocks[1].rows
    assert [row[5:7] for row in rows] == [
        ("reshard_after_forward=FSDP's default, reduce_dtype=fp32", "2 units"),
        ("reshard_after_forward=False (commprof's), reduce_dtype=fp32", "2 units"),
    ]


def test_several_deepspeed_engines_are_named_with_their_settings_not_their_collectives():
    """An actor and a critic, each a DeepSpeed engine: ZeRO's buckets hold no model's own sizes, so their collectives
    are said not told apart rather than counted to either; one engine alone is the run's model (no section)."""
    from commprof.results.run_record import BuiltDeepSpeed

    actor = BuiltDeepSpeed(
        "GPT", 2, {"reduce_bucket_size": 500_000}, parameters=1_000, name="actor", built_at="rl.py:9"
    )
    critic = BuiltDeepSpeed("GPT", 2, {"reduce_bucket_size": 500_000}, parameters=900, name="critic")
    run = run_summary(script=["rl.py"], job=Job([actor, critic]))
    rank = _rank([("all_reduce", 2_000_000, 10_000, 8_000, "backward", None)])
    accounts = model_accounts(run, [rank])
    assert [(a.name, a.kind, a.told_apart) for a in accounts] == [("actor", "ZeRO", False), ("critic", "ZeRO", False)]
    rows = models_section(Report("r", "run", "now", [], [], [], run=run, models=accounts))[0].blocks[1].rows
    assert rows[0][5:] == ("stage=2, reduce_bucket_size=500000", "-", *["not told apart"] * 3)
    assert model_accounts(run_summary(script=["one.py"], job=Job([actor])), [rank]) == []


def test_fsdp_units_are_matched_by_their_recorded_shard_in_the_collectives_own_dtype():
    """On NCCL an all-gather's size is its output (every rank's shard); under bf16 mixed precision each element is 2
    bytes. A unit of 10 x 10 + 10 parameters on 8 ranks pads each parameter to 16 rows: 16 x 10 / 8 + 16 / 8 = 22
    elements a rank, 176 in all, 1.6 times its 110 parameters, beyond any rule from the parameters alone."""
    small = BuiltFSDP(
        "Linear", name="head", parameters=110, units=["Linear"], unit_parameters=[110], unit_shard_elements=[22]
    )
    run = dataclasses.replace(run_summary(script=["big.py"]), job=Job([small]), world_size=8)
    gather, scatter = "parameter all-gather", "gradient reduce-scatter"
    calls = [
        ("all_gather", 176 * 2, 1_000, 1_000, "forward", gather),  # NCCL: its bf16 output, 176 elements
        ("all_gather", 22 * 2, 3_000, 1_000, "backward", gather),  # Gloo's count: the shard
        ("reduce_scatter", 176 * 4, 5_000, 2_000, "backward", scatter),  # fp32 gradients, the whole padded buffer
        ("all_gather", 110 * 2, 9_000, 1_000, "forward", gather),  # unpadded: not this unit's
    ]
    trace, steps = _rank(calls)
    in_bf16 = tuple(
        dataclasses.replace(c, dtype="c10::BFloat16" if c.op == "all_gather" else "float") for c in trace.collectives
    )
    (head,) = model_accounts(run, [(dataclasses.replace(trace, collectives=in_bf16), steps)])
    assert (head.calls_per_step, head.ms_per_step) == (3.0, 4.0)


def test_a_setting_for_one_model_is_labelled_pasted_and_applied_as_such():
    setting = DDPOptions(bucket_cap_mb=1, ddp_model="discriminator")
    assert setting.label() == "bucket-1mb_for-discriminator"
    assert DDPOptions(bucket_cap_mb=None, ddp_model="discriminator").label() == "script-own"
    assert words_of(DDP).paste(setting) == "DDP(discriminator, bucket_cap_mb=1)"
    assert words_of(DDP).paste(DDPOptions(bucket_cap_mb=1)) == "DDP(model, bucket_cap_mb=1)"
    # a second DDP of one name, "tower#2", is pasted as the script wrote it: test_render_model_words.py
    assert "ddp_model" not in applied_to_a_script(setting)


def test_tune_layouts_of_a_script_with_two_models_name_each():
    from commprof.config import RunConfig
    from commprof.results.run_record import RunRecord

    run = RunRecord("t", RunConfig(run_id="t"), job=Job([GENERATOR, DISCRIMINATOR]))
    layout_of = DDP.layouts(run)
    every = layout_of(DDPOptions(bucket_cap_mb=1))
    # at a cap of 1 MB: the generator's two 1 MiB parameters a bucket each, the discriminator's two of 0.25 MiB one
    # (this layout's words, each model's buckets by its name: test_render_model_words.py)
    assert every == ((MIB, MIB), (MIB // 2,))
    # set on the discriminator alone: the generator keeps its own cap of 4, one bucket of both
    assert layout_of(DDPOptions(bucket_cap_mb=1, ddp_model="discriminator")) == ((2 * MIB,), (MIB // 2,))
    # advise's setting for the discriminator of a run that capped both at 1: the generator keeps the run's 1
    kept = DDPOptions(bucket_cap_mb=4, ddp_model="discriminator", others_bucket_cap_mb=1)
    assert layout_of(kept) == ((MIB, MIB), (MIB // 2,))


def test_the_module_passed_is_read_from_the_script_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """\
            gen = DDP(generator, bucket_cap_mb=4)
            self.ddp = DistributedDataParallel(module=self.model,
                                               device_ids=[0])
            DDP(nn.Sequential(nn.Linear(2, 2)))
            actor, *_ = deepspeed.initialize(args=args, model=self.actor, config=config)
            head = DDP(nn.Sequential(nn.Linear(2, 2)), bucket_cap_mb=1)
            self.head = DistributedDataParallel(
                nn.Sequential(nn.Linear(2, 2)), device_ids=[0]
            )
            model = DDP(net)
            gen, disc = DDP(Generator()), DDP(Critic())
            heads[0] = DDP(nn.Linear(2, 2))
            a = b = DDP(nn.Linear(2, 2))
            pair = (DDP(nn.Linear(2, 2)), 1)
            encoder = fully_shard(nn.Sequential(nn.Linear(2, 2)))
            """
        )
    )
    assert _first_argument(str(script), 1) == "generator"
    assert _first_argument(str(script), 2) == "self.model"
    assert _first_argument(str(script), 4) == ""  # not a name, nor assigned: the module's class names it
    assert _first_argument(str(script), 5, keyword="model") == "self.actor"  # DeepSpeed's engine
    # not a name: the target the call's result is assigned to names it, a plain name or an attribute
    assert _first_argument(str(script), 6) == "head"
    assert _first_argument(str(script), 7) == "self.head"
    assert _first_argument(str(script), 15) == "encoder"  # fully_shard's, as DDP's
    assert _first_argument(str(script), 10) == "net"  # the argument's own name wins
    # no single plain target, or the call not the whole right-hand side: the class names it
    assert [_first_argument(str(script), n) for n in (11, 12, 13, 14)] == ["", "", "", ""]
    assert unique("model", ["model"]) == "model#2" and unique("model", ["a"]) == "model"


class _Built:
    """Records its call site as DDP's overrides do."""

    def __init__(self, module, device=None):
        import inspect

        from commprof.instrument.call_site import call_site

        self.where, self.name = call_site(inspect.currentframe().f_back)

    def to(self, device):
        return self


def test_each_call_on_a_line_is_named_by_its_own_argument():
    generator, critic, device = object(), object(), "cpu"
    gen, disc = _Built(generator), _Built(critic)  # two on one line: each its own (Python 3.11's columns)
    chained = _Built(generator).to(device)  # the call that built it, not the one after it
    assert (gen.name, disc.name, chained.name) == ("generator", "critic", "generator")
    assert gen.where.startswith("test_several_models.py:") and gen.where == disc.where != chained.where


def test_a_call_not_given_a_name_is_named_by_its_assignment_target():
    generator, device = object(), "cpu"
    head = _Built(dict(layers=2))  # not a name: the target the result is assigned to
    head.inner = _Built(
        [generator],
    )  # an attribute, and a call written over several lines
    model = _Built(generator)  # the argument's own name wins
    first, second = _Built([1]), _Built([2])  # a tuple target: neither is named by it
    moved = _Built([generator]).to(device)  # the call is not the whole right-hand side
    names = [head.name, head.inner.name, model.name, first.name, second.name, moved.name]
    assert names == ["head", "head.inner", "generator", "", "", ""]


def _fsdp_run(asked=None, applied=None):
    built = BuiltFSDP(
        "Sequential",
        name="model",
        parameters=MIB // 4,
        units=["Sequential"] * 3,
        unit_parameters=[MIB // 16] * 3,
        asked=asked or {"reshard_after_forward": None},
        applied=applied or {},
    )
    return dataclasses.replace(run_summary(script=["fsdp.py"]), job=Job([built]), world_size=2)


def test_resharding_saves_the_backward_all_gathers():
    # per step: three forward all-gathers (kept either way) and three backward ones of 2, 3 and 4 ms: 9 ms a step
    gathers = [("all_gather", MIB, 5_000 * i, 1_000, "forward", "parameter all-gather") for i in range(3)] + [
        ("all_gather", MIB, 50_000 + 10_000 * i, 2_000 + 1_000 * i, "backward", "parameter all-gather")
        for i in range(3)
    ]
    run = _fsdp_run()
    report = Report("f", "run", "now", [], [], [], run=run)
    (finding,) = resharding(Evidence(report, [_rank(gathers)]))
    assert finding.gain_ms is not None and finding.gain_ms.value == 9.0
    assert finding.setting == {"reshard_after_forward": False}
    assert finding.facts.options.reshard_after_forward is False and finding.facts.gathers_per_step == 3.0
    # 262,144 parameters of 4 bytes, the half each rank does not hold: 0.5 MiB kept from forward to backward
    assert finding.facts.kept_bytes == 0.5 * 2**20
    # the script already keeps them: nothing to advise
    kept = _fsdp_run(asked={"reshard_after_forward": False})
    assert resharding(Evidence(dataclasses.replace(report, run=kept), [_rank(gathers)])) == []


def test_fsdp_options_as_ran_and_what_is_checked_on_fsdp():
    assert fsdp_options(_fsdp_run()) == FSDPOptions(reshard_after_forward=None)
    assert fsdp_options(_fsdp_run(applied={"forward_prefetch": 1})).forward_prefetch == 1
    assert fsdp_options(run_summary()) is None  # a built-in DDP run
    assert checked(_fsdp_run().job) == ["fsdp_reshard", "input_stall", "straggler", "stalls_now_and_then"]
    assert "bucket_cap" in checked(run_summary().job)


def test_fsdps_tune_measures_each_knob_against_the_script_as_written():
    settings = FSDP.knob_settings(FSDPOptions())
    assert [s.label() for s in settings] == [
        "script-own",
        "no-reshard",
        "fwd-prefetch-1",
        "bwd-prefetch-2",
        "reduce-bf16",
    ]
    assert FSDP.is_as_written(fsdp_as_written(FSDPOptions()))  # (each knob's paste: test_render_model_words.py)


def test_what_a_ddp_setting_is_set_on_is_said_and_a_name_no_ddp_has_refused():
    import pytest

    from commprof.commands.script_kind import OtherKind, several_models
    from commprof.config import RunConfig
    from commprof.render.job_text import models_text
    from commprof.results.run_record import RunRecord

    run = RunRecord("t", RunConfig(run_id="t"), job=Job([GENERATOR, DISCRIMINATOR]))
    # every model at once, or the one named; their words: test_render_model_words.py
    names = ["generator", "discriminator"]
    assert several_models(run, DDPOptions(bucket_cap_mb=None)) == models_text(names, None)
    assert several_models(run, DDPOptions(bucket_cap_mb=None, ddp_model="discriminator")) == models_text(
        names, "discriminator"
    )
    with pytest.raises(
        OtherKind, match="--ddp-model critic: the script builds no DDP of that name; it builds generator"
    ):
        several_models(run, DDPOptions(bucket_cap_mb=None, ddp_model="critic"))


def test_advise_changes_one_models_cap_alone_where_the_run_capped_every_model():
    from commprof.commands.advise import _for

    capped = DDPOptions(bucket_cap_mb=0.01)  # the run's --bucket-cap-mb 0.01, given every DDP
    setting = _for(capped, {"bucket_cap_mb": 2, "ddp_model": "generator"})
    assert (setting.bucket_cap_mb, setting.ddp_model, setting.others_bucket_cap_mb) == (2, "generator", 0.01)
    assert setting.label() == "bucket-2mb_for-generator_others-0.01mb"
    own = _for(DDPOptions(bucket_cap_mb=None), {"bucket_cap_mb": 2, "ddp_model": "generator"})
    assert own.others_bucket_cap_mb is None and own.label() == "bucket-2mb_for-generator"  # the others as written
