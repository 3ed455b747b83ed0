"""The findings' words, made in render/ from their facts (render/finding_words.py): each kind's sentence from facts
whose words are known, and report.json carrying them for its readers while keeping the facts it is read back from."""

import dataclasses

import pytest

from commprof.render.finding_words import WEIGHS, source_words, with_words, words
from commprof.render.findings_text import balanced
from commprof.render.rank_findings_text import straggler_action
from commprof.results import finding_facts as facts
from commprof.results.common import Estimate
from commprof.results.rank_facts import InputStall, Stalls, Straggler
from commprof.results.report import Finding, Report
from commprof.results.store import _build
from commprof.settings import DDPOptions, FSDPOptions

MB = 2**20
FITTED = facts.LinkSource("fitted", calls=12, ranks=[2])
PROBED = facts.LinkSource("probe", smallest=64 * 1024, largest=32 * MB)
LINK = facts.Link(2.62, 830.0, PROBED)
SLOW = facts.SlowCollectives([(MB, 0.52)], 3.15, FITTED, 833.0, 20 * MB, 26 * MB)
CAP = facts.BucketCap(10, [10 * MB, 10 * MB, 5 * MB], [25 * MB], 25, 10.0, LINK, False, [1], DDPOptions(10), "script")
SAID = [  # (facts, gain, the title, a part of the evidence, the action's start)
    (
        CAP,
        Estimate(8.0, 7.0, 9.0),
        "bucket_cap_mb=10 (3 buckets: 10.0, 10.0, 5.0 MiB) hides more of the gradient all-reduce",
        "10.0 ms of each step is exposed all-reduce after the backward pass; now one bucket of 25.0 MiB "
        "(bucket_cap_mb=25); link measured: 2.62 GB/s, 830 us per ring step (all-reduces of 64 KiB to 32 MiB timed "
        "alone after training); as good within the interval: 1",
        "DDP(model, bucket_cap_mb=10)",
    ),
    (
        dataclasses.replace(CAP, cap_mb=50, buckets_then=[26 * MB], serial=True, slow=SLOW, as_good=[]),
        Estimate(1.7, 1.7, 1.7),
        "bucket_cap_mb=50 (one bucket of 26.0 MiB) saves all-reduce calls",
        "counts every all-reduce in full: the gain is what fewer calls save; slow all-reduces: 1.00 MiB at 0.52 GB/s, "
        "against 3.15 GB/s for large messages on this link (the alpha-beta fit to the run's all-reduces, 833 us per "
        "ring step",
        "DDP(model, bucket_cap_mb=10)",
    ),
    (
        facts.ZeroBuckets(5e8, 2e8, 4, 2, 2, 3.5, dataclasses.replace(LINK, source=FITTED), True),
        Estimate(2.0, 1.0, 3.0),
        "reduce_bucket_size=5e8 saves gradient reductions (4 a step, then 2)",
        "ZeRO stage 2 reduces the gradients in 4 buckets a step at reduce_bucket_size=2e8 elements; 3.5 ms of each "
        "step is exposed gradient reduction after the backward pass; link fitted: 2.62 GB/s, 830 us per ring step; on "
        "CPU ranks",
        '"zero_optimization": {"reduce_bucket_size": 5e8}',
    ),
    (
        facts.FsdpReshard(3.0, 0.5 * MB, True, FSDPOptions(reshard_after_forward=False), "dp"),
        Estimate(9.0, 8.0, 10.0),
        "reshard_after_forward=False skips the backward's parameter all-gathers over dp",
        "3.0 parameter all-gathers per step run again in the backward, each in full on CPU ranks; each rank then "
        "holds up to 0.5 MiB more between forward and backward",
        "fully_shard(each block, then the model, reshard_after_forward=False)",
    ),
    (
        facts.HorovodFusion(8 * MB, 2 * MB, 26, 2, 4.0, 30, True, 50.0, 1.5, True),
        Estimate(3.0, 2.0, 4.0),
        "HOROVOD_FUSION_THRESHOLD of 8 MiB fuses the gradients into fewer allreduces (26 a step, then 2)",
        "Horovod's 2 MiB fusion buffer split what its cycles had ready into 26 allreduces a step; 4.0 ms of each "
        "profiled step is exposed communication; replayed on the 30 training steps the profiler did not touch",
        "HOROVOD_FUSION_THRESHOLD=8388608",
    ),
    (
        facts.Compression(
            "fp16",
            "float16",
            True,
            5.0,
            2.6,
            None,
            25 * MB,
            500.0,
            0.5,
            1,
            4.5,
            {},
            False,
            DDPOptions(25, comm_hook="fp16"),
        ),  # fmt: skip
        Estimate(4.5, 4.0, 5.0),
        "fp16 gradient compression: the halved bytes save more on this link than the casts cost",
        "a cast of a 25.0 MiB bucket to float16 and back costs 500 us on this device, 0.5 ms per step for 1 "
        "bucket(s); the halved bytes save 5.0 ms per step on this link (2.600 GB/s for float32; the 16-bit all-reduce "
        "was not timed: as float32's): net 4.5 ms; bf16 not weighed: torch's DDP registers bf16_compress_hook only "
        "over NCCL",
        "DDP(model, bucket_cap_mb=25); ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)",
    ),
    (
        facts.Compression("fp16", "float16", False, 5.0, 2.6, None, options=DDPOptions(comm_hook="fp16")),
        Estimate(5.0, -1.0, 6.0),
        "fp16 gradient compression halves the bytes on this link (the casts' cost not measured)",
        "what the casts cost was not measured here",
        "DDP(model, bucket_cap_mb=25); ddp.register_comm_hook",
    ),
    (
        facts.Accumulation(4, 4, 40.0, True, 32, 32, options=DDPOptions(25, grad_accum=4)),
        Estimate(30.0, 30.0, 30.0),
        "accumulate 4 micro-batches per step under no_sync: the all-reduce is paid once per 4 times the samples",
        "saved per today's step of samples: 0.938 ms per sample [0.938, 0.938] of today's 32 per rank",
        "DDP(model, bucket_cap_mb=25)  # and all-reduce every 4 micro-batches (no_sync for the others)",
    ),
    (
        facts.LargerBatch(2, 1, 40.0, True, 32, 32),
        Estimate(20.0, 20.0, 20.0),
        "a 2x larger per-rank batch pays the all-reduce once per 2 times the samples",
        "0.625 ms per sample",
        "commprof run ... --batch-size 64",
    ),
    (
        facts.LargerBatch(2, 1, 24.0, True, 32, 32, share=0.24, share_high=0.27, bound=0.25, near_bound=True),
        Estimate(12.0, 8.0, 14.0),
        "a 2x larger per-rank batch pays the all-reduce once per 2 times the samples",
        "communication is 24% of the step, under the 25% above which this is advised, and a rerun's may reach 27%",
        "commprof run ... --batch-size 64",
    ),
    (
        facts.LargerBatch(2, 1, 40.0, False, None, None),
        Estimate(20.0, 20.0, 20.0),
        "a 2x larger per-rank batch pays the all-reduce once per 2 times the samples",
        "its samples per rank are not known here",
        "a 2x larger per-rank batch in the script's data loader",
    ),
    (
        facts.ProfilerDistortion(0.22),
        None,
        "the profiler slowed the steps it recorded by 22%",
        "the job's median step inside the profiled window",
        "commprof run ... --schedule WAIT,1,2",
    ),
    (
        InputStall(1, 6.0, [1], 2),
        Estimate(6.0, 5.0, 7.0),
        "the steps start idle on 1 of 2 ranks",
        "rank 1 runs no operator for the first 6.0 ms of each step",
        "DataLoader(",
    ),
    (
        Straggler(
            1, 3.0, {"all_reduce": 3.0}, 16, 4, 12, 3.0, {"compute_ms": 3.0}, 0.0, "compute_ms", 3.0, "backward", False
        ),  # fmt: skip
        Estimate(3.0, 3.0, 3.0),
        "rank 1 is the straggler: the others wait for it",
        "late in 16 of 16 steps weighed (4 profiled, 12 unprofiled), bounded by its own extra time outside "
        "communication: +3.0 ms a step",
        "look at rank 1's compute in its backward (+3.0 ms per step against the others)",
    ),
    (
        Straggler(3, 3.0, {}, 4, 4, 0, None, {}, 0.0, "start_idle_ms", 40.0, None, False, "tp", [2, 3]),
        Estimate(3.0, 3.0, 3.0),
        "rank 3 is the straggler of its tp group (ranks 2,3): rank 2 waits for it",
        "late in 4 of 4 profiled steps",
        "look at rank 3's idle before its first operator (input pipeline)",
    ),
    (
        Stalls(1, list(range(20, 101, 10)), 100, 200.0, 10, None, None, (8, 17), 18.0),
        Estimate(18.0, 17.0, 19.0),
        "rank 1 stalls now and then: the others wait for it",
        "9 of the run's 100 steps took 200 ms longer because of it (steps 20, 30, 40, 50, 60, 70, 80, 90, ..., every "
        "10 steps); the profiled window, steps 8-17, has none of them",
        "look at what rank 1 does at those steps",
    ),
]


@pytest.mark.parametrize("fact, gain, title, evidence, action", SAID, ids=[type(s[0]).__name__ for s in SAID])
def test_each_kinds_words_from_its_facts(fact, gain, title, evidence, action):
    said = words(Finding(fact.KIND, fact, gain_ms=gain))
    assert said[0] == title and evidence in said[1] and said[2].startswith(action), said


def test_where_a_link_comes_from():
    assert source_words(FITTED) == "fitted to 12 measured all-reduces at 2 ranks"
    assert source_words(facts.LinkSource("timed", calls=5)) == "fitted to 5 all-reduce sizes timed alone after the runs"
    assert source_words(facts.LinkSource("given", given="25GB/s,5us")) == "given: --link 25GB/s,5us"
    assert source_words(facts.LinkSource("bench", given="b1")) == "commprof bench b1"


def test_report_json_keeps_the_facts_and_carries_the_words():
    """Written: the words beside the facts; read back: the same facts, of the kind's own type."""
    report = Report("r", "run", "", [], [], [], findings=[Finding("bucket_cap", CAP, Estimate(8.0, 7.0, 9.0))])
    written = with_words(report).to_dict()
    (finding,) = written["findings"]
    assert finding["title"] == words(report.findings[0])[0] and finding["facts"]["cap_mb"] == 10
    read = _build(Report, written)
    assert read.findings[0].facts == CAP and isinstance(read.findings[0].facts.link.source, facts.LinkSource)
    older = {**finding, "facts": None}  # a report written before findings held facts: its own words
    assert words(_build(Finding, older))[0] == finding["title"]


def test_nothing_to_gain_names_what_was_checked_for_this_job():
    ddp = Report("r", "run", "", [], [], [], checked=["bucket_cap", "straggler"])
    assert "none of what was checked (DDP's bucket size, a straggler)" in balanced(ddp)
    unknown = balanced(Report("r", "analysis", "", [], [], []))  # traces from elsewhere: every kind
    assert all(what in unknown for what in WEIGHS.values())


def test_where_the_straggler_advice_points():
    """The part really in excess, and only hardware the run used; nothing in excess: no part blamed (test_findings.py:
    the part in excess that a straggler's facts hold)."""

    def advice(look_at: str, ms: float, gpu: bool = False) -> str:
        facts = Straggler(1, 3.0, {}, 3, 3, 0, None, {}, 0.0, look_at, ms, None, gpu)
        return straggler_action(facts)

    assert advice("compute_ms", 3.0) == (
        "look at rank 1's compute (+3.0 ms per step against the "
        "others): what else runs on its host's cores (its CPU "
        "threads), its data shard"
    )
    assert "nvidia-smi" in advice("compute_ms", 3.0, gpu=True)
    assert advice("start_idle_ms", 40.0).startswith("look at rank 1's idle before its first operator")
    action = advice("", -0.2)
    assert action.startswith("none of rank 1's compute, input wait, communication or time between operators is larger")
    assert "DataLoader" not in action and "GPU" not in action
    # a hook on its optimizer's step that sleeps: time in its optimizer step outside any operator, not input
    assert advice("optimizer_idle_ms", 25.2) == (
        "look at rank 1's time in its optimizer step outside any operator (+25.2 ms per step against the others): the "
        "hooks on its optimizer's step (logging, an EMA of the weights, checkpoints)"
    )
