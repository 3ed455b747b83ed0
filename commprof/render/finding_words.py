"""The words of every finding, made from its facts (results/finding_facts.py): a title, the evidence and the line to
act on; and what each kind weighs, as "what was checked" names it. The kinds about ranks are said by
render/rank_findings_text.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from commprof.render.kind_words import cap_label, describe, paste
from commprof.render.rank_findings_text import input_stall_words, stalls_words, straggler_words
from commprof.results import finding_facts as facts
from commprof.results.common import Result
from commprof.results.rank_facts import InputStall, Stalls, Straggler
from commprof.results.report import Finding, Report
from commprof.settings import MIB, DeepSpeedOptions, HorovodOptions, elements

Words = tuple[str, str, str]
MB = 2**20

# What each kind weighs, in the words of the sentence that says what was checked.
WEIGHS = {
    "bucket_cap": "DDP's bucket size",
    "zero_buckets": "DeepSpeed's reduce_bucket_size",
    "fsdp_reshard": "FSDP's resharding after forward",
    "horovod_fusion": "Horovod's fusion buffer",
    "compression": "gradient compression",
    "accumulation": "gradient accumulation",
    "batch": "a larger per-rank batch",
    "slow_collectives": "all-reduces far below the link's bandwidth",
    "input_stall": "steps that start idle",
    "straggler": "a straggler",
    "stalls_now_and_then": "a rank that stalls now and then",
}
# measured with `commprof advise` (docs/benchmarks.md): on CPU ranks the exposed time fell as the overlap model
# predicted and the step did not (Gloo's threads run on the cores the backward uses), so there the model counts every
# all-reduce in full, hidden or not: what a setting can save is calls (latency) and bytes, not overlap
SERIAL = (
    "; on CPU ranks communication takes the backward's cores whether or not it overlaps it, so the model "
    "counts every all-reduce in full: the gain is what fewer calls save"
)
BF16_NCCL_ONLY = "torch's DDP registers bf16_compress_hook only over NCCL (register_comm_hook refuses it elsewhere)"


def source_words(source: facts.LinkSource) -> str:
    """Where a link model comes from, as a parenthesis names it."""
    if source.how == "probe":
        return f"all-reduces of {source.smallest // 1024} KiB to {source.largest // MB} MiB timed alone after training"
    if source.how == "fitted":
        return f"fitted to {source.calls} measured all-reduces at {', '.join(map(str, source.ranks))} ranks"
    if source.how == "timed":
        return f"fitted to {source.calls} all-reduce sizes timed alone after the runs"
    if source.how == "given":
        return f"given: --link {source.given}"
    if source.how == "bench":
        return f"commprof bench {source.given}"
    return source.how


def _link(link: facts.Link) -> str:
    measured = link.source.how == "probe"
    return (
        f"link {'measured' if measured else 'fitted'}: {link.bandwidth_gbps:.2f} GB/s, {link.alpha_us:.0f} us per ring "
        "step" + (f" ({source_words(link.source)})" if measured else "")
    )


def bucket_cap_words(f: facts.BucketCap, _: Finding) -> Words:
    whose = f"{f.model}'s " if f.model else ""
    evidence = (
        f"{f.exposed_ms:.1f} ms of each step is exposed {whose}all-reduce after the backward pass; now "
        f"{describe(f.buckets_now)} ({cap_label(f.cap_now)}); {_link(f.link)}"
        + (f"; as good within the interval: {', '.join(f'{c:g}' for c in f.as_good)}" if f.as_good else "")
        + (SERIAL if f.serial else "")
    )
    if f.slow is not None:
        evidence += f"; slow all-reduces: {slow_collectives_words(f.slow, _)[1]}"
    return (
        f"{f.model}: " * bool(f.model)
        + f"bucket_cap_mb={f.cap_mb:g} ({describe(f.buckets_then)}) "
        + ("saves all-reduce calls" if f.serial else "hides more of the gradient all-reduce"),
        evidence,
        paste(f.options, f.framework),
    )


def slow_collectives_words(f: facts.SlowCollectives, _: Finding) -> Words:
    sizes = ", ".join(f"{nbytes / MB:.2f} MiB at {gbps:.2f} GB/s" for nbytes, gbps in f.sizes)
    source = (
        f"the alpha-beta fit to the run's all-reduces, {f.alpha_us:.0f} us per ring step; their durations include any "
        "wait for late ranks"
        if f.top.how == "fitted"
        else source_words(f.top)
    )
    reach, gradients = f.reach_bytes / MB, f.gradient_bytes / MB
    return (
        f"{len(f.sizes)} all-reduce size(s) run far below the link's bandwidth",
        f"{sizes}, against {f.top_gbps:.2f} GB/s for large messages on this link ({source})",
        f"fewer, larger messages: all-reduces of {reach:.0f} MiB or more reach 80% of the link (a larger "
        "bucket_cap_mb; the remainder bucket DDP leaves stays small)"
        if f.reach_bytes < f.gradient_bytes
        else f"the link's latency: it needs {reach:.0f} MiB messages to reach 80% of its bandwidth, more than the "
        f"{gradients:.0f} MiB of gradients; a faster interconnect or fewer ranks per link",
    )


def zero_buckets_words(f: facts.ZeroBuckets, _: Finding) -> Words:
    return (
        f"reduce_bucket_size={elements(f.size)} saves gradient reductions ({f.calls_now} a step, then {f.calls_then})",
        f"ZeRO stage {f.stage} reduces the gradients in {f.calls_now} buckets a step at "
        f"reduce_bucket_size={elements(f.own)} elements; {f.exposed_ms:.1f} ms of each step is exposed gradient "
        f"reduction after the backward pass; {_link(f.link)}"
        + (SERIAL.replace("all-reduce", "gradient reduction") if f.serial else ""),
        paste(DeepSpeedOptions(reduce_bucket_size=f.size), baseline=DeepSpeedOptions(reduce_bucket_size=f.own)),
    )


def fsdp_reshard_words(f: facts.FsdpReshard, _: Finding) -> Words:
    held = f.kept_bytes / MB
    return (
        "reshard_after_forward=False skips the backward's parameter all-gathers"
        + (f" over {f.dimension}" if f.dimension else ""),
        f"{f.gathers_per_step:.1f} parameter all-gathers per step run again in the backward, "
        + ("each in full on CPU ranks" if f.serial else "the part no computation hid")
        + (f"; each rank then holds up to {held:.1f} MiB more between forward and backward" if f.kept_bytes else ""),
        paste(f.options),
    )


def horovod_fusion_words(f: facts.HorovodFusion, _: Finding) -> Words:
    best, own = f.threshold_bytes / MIB, f.own_bytes / MIB
    where = "the profiler did not touch" if f.untouched else "of the run, the profiler's too"
    return (
        f"HOROVOD_FUSION_THRESHOLD of {best:g} MiB fuses the gradients into fewer allreduces ({f.calls_now:g} a step, "
        f"then {f.calls_then:g})",
        f"Horovod's {own:g} MiB fusion buffer split what its cycles had ready into {f.calls_now:g} allreduces a "
        f"step; {f.exposed_ms:.1f} ms of each profiled step is exposed communication; replayed on the {f.steps} "
        f"training steps {where} (median {f.step_ms:.1f} ms), less what the calls a buffer of {best:g} MiB folds "
        f"into the one before took beyond their bytes at {f.bandwidth_gbps:.2f} GB/s (the link "
        f"{'measured' if f.measured else 'fitted'})",
        paste(HorovodOptions(fusion_threshold_mb=best), baseline=HorovodOptions()),
    )


def compression_words(f: facts.Compression, _: Finding) -> Words:
    action = paste(f.options, f.framework)
    if not f.casts_measured:
        return (
            f"{f.hook} gradient compression halves the bytes on this link (the casts' cost not measured)",
            f"the halved bytes save {f.saved_ms:.1f} ms per step on this link ({f.float_gbps:.3f} GB/s); what the "
            "casts cost was not measured here (traces from elsewhere, or a run before commprof timed them), so this "
            "is an upper bound and no claim: a `commprof run` of the job measures them",
            action,
        )
    others = ", ".join(f"{other}: {ms:+.1f} ms" for other, ms in f.others.items())
    return (
        f"{f.hook} gradient compression: the halved bytes save more on this link than the casts cost",
        f"a cast of a {f.largest_bytes / MB:.1f} MiB bucket to {f.dtype} and back costs {f.largest_cast_us:.0f} us "
        f"on this device, {f.casts_ms:.1f} ms per step for {f.buckets} bucket(s); the halved bytes save "
        f"{f.saved_ms:.1f} ms per step on this link ({f.float_gbps:.3f} GB/s for float32"
        + (
            f", {f.halved_gbps:.3f} GB/s for {f.dtype} as measured"
            if f.halved_gbps is not None
            else "; the 16-bit all-reduce was not timed: as float32's"
        )
        + f"): net {f.net_ms:.1f} ms"
        + (f" (the other hook nets {others})" if others else "")
        + ("" if f.bf16_weighed else f"; bf16 not weighed: {BF16_NCCL_ONLY}"),
        action,
    )


def accumulation_words(f: facts.Accumulation, finding: Finding) -> Words:
    batch, per_step, gain = isinstance(f, facts.LargerBatch), f.samples_per_step, finding.gain_ms
    if per_step and gain is not None:
        per_sample = (
            f"{gain.value / per_step:.3f} ms per sample [{gain.low / per_step:.3f}, {gain.high / per_step:.3f}] of "
            f"today's {per_step} per rank"
        )
    else:
        per_sample = "its samples per rank are not known here: divide by them for the gain per sample"
    if not batch:
        action = paste(f.options, f.framework)
    elif f.batch_size:
        action = f"commprof run ... --batch-size {f.batch_size * f.factor}"
    else:
        action = f"a {f.factor}x larger per-rank batch in the script's data loader"
    return (
        f"a {f.factor}x larger per-rank batch pays the all-reduce once per {f.factor} times the samples"
        if batch
        else f"accumulate {f.micro_batches} micro-batches per step under no_sync: the all-reduce is paid once per "
        f"{f.factor} times the samples",
        f"{f.paid_ms:.1f} ms of communication is paid by every step"
        + (" (every all-reduce in full on this link, as on CPU ranks)" if f.serial else " (exposed)")
        + f"; saved per today's step of samples: {per_sample}; the global batch grows {f.factor}x: scale the "
        "learning rate with it (linear rule, with a warm-up)"
        + ("; the model takes compute per sample as today's, and needs the memory" if batch else "")
        + _near_bound(f),
        action,
    )


def _near_bound(f: facts.Accumulation) -> str:
    """Where a rerun's share of communication may fall on the other side of the bound above which it is advised."""
    if not f.near_bound:
        return ""
    said, bound = f"; communication is {f.share:.0%} of the step", f"the {f.bound:.0%} above which this is advised"
    if f.share >= f.bound:
        return f"{said}, and a rerun's may be as low as {f.share_low:.0%}, under {bound}"
    return f"{said}, under {bound}, and a rerun's may reach {f.share_high:.0%}"


def profiler_distortion_words(f: facts.ProfilerDistortion, _: Finding) -> Words:
    return (
        f"the profiler slowed the steps it recorded by {f.slowdown:.0%}",
        "the job's median step inside the profiled window against its unprofiled steps in the same run, each its "
        "slowest rank's",
        "commprof run ... --schedule WAIT,1,2  (a shorter active window; the breakdown and phases below describe "
        "slowed steps)",
    )


SAID: dict[type, Callable[[Any, Finding], Words]] = {
    facts.BucketCap: bucket_cap_words,
    facts.SlowCollectives: slow_collectives_words,
    facts.ZeroBuckets: zero_buckets_words,
    facts.FsdpReshard: fsdp_reshard_words,
    facts.HorovodFusion: horovod_fusion_words,
    facts.Compression: compression_words,
    facts.Accumulation: accumulation_words,
    facts.LargerBatch: accumulation_words,
    facts.ProfilerDistortion: profiler_distortion_words,
    InputStall: lambda f, _: input_stall_words(f),
    Straggler: lambda f, _: straggler_words(f),
    Stalls: lambda f, _: stalls_words(f),
}


def words(finding: Finding) -> Words:
    """(title, evidence, action) of a finding, from its facts; a report written before findings held facts keeps its
    words."""
    if finding.facts is None:
        return finding.title, finding.evidence, finding.action
    return SAID[type(finding.facts)](finding.facts, finding)


def with_words(result: Result) -> Result:
    """A report whose findings carry their words too (title, evidence, action), for report.json's readers."""
    if not isinstance(result, Report):
        return result

    def worded(findings: list[Finding]) -> list[Finding]:
        said = []
        for finding in findings:
            title, evidence, action = words(finding)
            said.append(dataclasses.replace(finding, title=title, evidence=evidence, action=action))
        return said

    return dataclasses.replace(result, findings=worded(result.findings), within_noise=worded(result.within_noise))
