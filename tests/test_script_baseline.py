"""A script's sweep, tune and advise measure the script as it is written (its own DDP arguments, none applied) as
their baseline, described by the buckets DDP built; every other setting is applied on top. --max-steps sets every
launch's length. Sizes read apart. Pure logic, no process."""

from __future__ import annotations

import dataclasses

import pytest

from commprof.analysis.stats import speedup_ci
from commprof.analysis.sweep import recommend
from commprof.analysis.tune import next_bucket_sizes
from commprof.commands.script_sweep import launch_lengths
from commprof.commands.sweep import baseline_of, grid_settings
from commprof.config import RunConfig, RunRequest
from commprof.errors import UsageError
from commprof.kinds import DDP, DEEPSPEED
from commprof.kinds.ddp_buckets import MB
from commprof.plans import SweepOptions, SweepPlan
from commprof.render.kind_words import words_of
from commprof.results.common import Estimate
from commprof.results.report import SettingResult, Verdict
from commprof.settings import OWN_LABEL, DDPOptions, own_setting, setting_label

# tests/data/scripts/train_default_ddp.py: twelve 256x256 layers and a 256x10 head, DDP(model) with no cap
OWN_BUCKETS = [1_062_952, 2_105_344]  # DDP's default: the first bucket closes past 1 MiB, the rest under 25 MiB
CAP_1_BUCKETS = [1_062_952, 1_052_672, 1_052_672]
CAP_25_BUCKETS = [3_168_296]


def test_a_scripts_baseline_is_its_own_setting_and_a_built_in_models_stays():
    script = RunRequest(script=("train.py",))
    assert baseline_of(script) == own_setting(DDPOptions()) == DDPOptions(bucket_cap_mb=None)
    assert setting_label(baseline_of(script)) == OWN_LABEL == "script-own"
    assert baseline_of(RunRequest()) == DDPOptions() and setting_label(DDPOptions()) == "bucket-25mb"
    # options given for the whole sweep stay on the baseline, and its label says so
    given = RunRequest(script=("train.py",), ddp=DDPOptions(comm_hook="fp16", find_unused_parameters=True))
    assert setting_label(baseline_of(given)) == "script-own_hook-fp16_find-unused"


def test_no_cap_is_a_scripts_alone():
    with pytest.raises(UsageError, match="a script's own"):
        RunConfig(run_id="x", ddp=DDPOptions(bucket_cap_mb=None))
    assert RunConfig(run_id="x", ddp=DDPOptions(bucket_cap_mb=None), script=("train.py",)).ddp.bucket_cap_mb is None
    own = DDPOptions(bucket_cap_mb=None)
    with pytest.raises(UsageError, match="a script's own"):
        SweepPlan(run=RunConfig(run_id="x"), settings=(own, DDPOptions()), baseline=own)
    with pytest.raises(UsageError, match="--bucket-cap-mb must be > 0, got 0"):
        DDPOptions(bucket_cap_mb=0)


def test_settings_set_on_top_only_what_they_vary():
    own = own_setting(DDPOptions())
    caps = grid_settings(DDPOptions(), {"bucket_cap_mb": [1.0, 25.0], "static_graph": [False]})
    # the script's own static_graph stays: no setting asks for another
    assert DDP.forced([own, *caps], own) == ("bucket_cap_mb",)
    both = grid_settings(DDPOptions(), {"bucket_cap_mb": [25.0], "static_graph": [False, True]})
    assert DDP.forced([own, *both], own) == ("bucket_cap_mb", "static_graph")
    # advise on a run that applied 0.001 MB: its baseline applies that as the run did, the finding's 25 explicitly
    run = DDPOptions(bucket_cap_mb=0.001)
    assert DDP.forced([run, DDPOptions(bucket_cap_mb=25.0)], run) == ("bucket_cap_mb",)


def test_max_steps_sets_every_launchs_length():
    assert launch_lengths(None, SweepOptions(repeats=5)) == (SweepOptions(repeats=5), None)
    options, steps = launch_lengths(12, SweepOptions(warmup_steps=2, profile_steps=3))
    assert steps == 12 and options == SweepOptions(warmup_steps=2, steps_per_repeat=10, profile_steps=3)
    assert launch_lengths(7, SweepOptions())[0].steps_per_repeat == 4  # the defaults: 3 untimed, then 4 timed
    with pytest.raises(UsageError, match="--max-steps and --steps-per-repeat: give one"):
        launch_lengths(12, SweepOptions(steps_per_repeat=4))
    with pytest.raises(UsageError, match="--max-steps 6 is too few: .* give 7 or more"):
        launch_lengths(6, SweepOptions(warmup_steps=3, profile_steps=3))


def setting(label: str, options: dict, buckets: list[int], step: float, speedup: float, significant: bool):
    return SettingResult(
        label=label,
        options=options,
        buckets=len(buckets),
        bucket_sizes=buckets,
        step_ms=Estimate(step, step - 1, step + 1),
        samples=8,
        speedup=Estimate(speedup, speedup - 0.05, speedup + 0.05),
        significant=significant,
        exposed_comm_ms=1.0,
        overlap_pct=10.0,
        allreduce_calls_per_step=float(len(buckets)),
        traces=label,
    )


OWN_OPTIONS = {**DDPOptions(bucket_cap_mb=None).__dict__}


def test_what_a_scripts_sweep_calls_for():
    """The verdicts' facts (their words: tests/test_render_verdict_words.py): bucket-1mb's 1.01x within the noise of
    the script's own; bucket-25mb 1.33x beyond it; a slower setting leaves the script's own the fastest."""
    own = setting(OWN_LABEL, OWN_OPTIONS, OWN_BUCKETS, 20.0, 1.0, False)
    cap1 = setting("bucket-1mb", {**OWN_OPTIONS, "bucket_cap_mb": 1.0}, CAP_1_BUCKETS, 19.8, 1.01, False)
    cap25 = setting("bucket-25mb", {**OWN_OPTIONS, "bucket_cap_mb": 25.0}, CAP_25_BUCKETS, 15.0, 1.33, True)
    barely = recommend([own, cap1], own, DDP, own=True)
    assert (barely.outcome, barely.knob_only, barely.own) == ("barely_matters", True, True)
    assert barely.spread_pct == pytest.approx(6.0)
    best = recommend([own, cap1, cap25], own, DDP, own=True)
    assert (best.outcome, best.fastest) == ("best", "bucket-25mb")
    slower = dataclasses.replace(cap25, speedup=Estimate(0.7, 0.65, 0.75))  # slower beyond the noise
    assert recommend([own, slower], own, DDP, own=True).outcome == "baseline_fastest"
    base = setting("bucket-25mb", DDPOptions().__dict__, CAP_25_BUCKETS, 15.0, 1.0, False)  # a built-in model's
    verdict = recommend([base, cap1], base, DDP)
    assert verdict == Verdict("barely_matters", "bucket-1mb", False, spread_pct=verdict.spread_pct, knob_only=True)
    assert verdict.spread_pct == pytest.approx(6.0)


def test_a_paste_line_without_a_cap():
    assert words_of(DDP).paste(DDPOptions(bucket_cap_mb=None, static_graph=True)) == "DDP(model, static_graph=True)"
    assert words_of(DDP).paste(DDPOptions(bucket_cap_mb=None), "transformers") == "TrainingArguments(...)"


def test_tune_weighs_the_scripts_own_setting_and_refines_around_the_best_cap():
    from commprof.kinds.ddp_buckets import layout

    caps = {1.0: [60.0, 61, 59, 60], 5.0: [50.0, 51, 49, 50], 25.0: [40.0, 41, 39, 40]}
    # the script's own steps are as fast as the best cap, the other caps are slower: refine around 25
    assert next_bucket_sizes(caps, 0, own=[40.0, 40.5, 39.5, 40]) == [11.0, 50.0]
    # a 24 MiB layer, a 4 MiB one, a 4 KiB bias: DDP's default builds (4 MiB + 4 KiB, 24 MiB), and so does 2.5;
    # 5 and above build one bucket. Around the best, 5, the refinement would try 2.5 and 11: 11 builds 5's
    # bucket, and 2.5 the script's own buckets, measured already
    sizes = [24 * MB, 4 * MB, 4096]
    caps = {5.0: [40.0, 41, 39, 40], 25.0: [50.0, 51, 49, 50], 100.0: [52.0, 51, 53, 50]}
    own_layout = layout(sizes, None)
    assert layout(sizes, 2.5) == own_layout == (4 * MB + 4096, 24 * MB)
    assert next_bucket_sizes(caps, 0, lambda mb: layout(sizes, mb)) == [2.5]
    assert next_bucket_sizes(caps, 0, lambda mb: layout(sizes, mb), own=[45.0, 44, 46, 45], own_layout=own_layout) == []
    # every setting within the noise of the best, own included: done
    flat = {1.0: [40.0, 41, 39, 40], 5.0: [40.2, 40, 41, 39]}
    assert next_bucket_sizes(flat, 0, own=[39.0, 41, 40, 40.5]) == []


def test_of_two_sizes_that_run_alike_the_larger_is_named_so_that_a_rerun_names_it_again():
    """Two sizes far better than the script's own that run alike (hand-made steps): which is faster is the noise
    between repeats (two README regenerations named 5e5, then 2.5e5), so the larger size, the fewer calls, is named;
    one slower beyond the noise is not."""
    from commprof.analysis.sweep import _named_best
    from commprof.settings import DeepSpeedOptions

    def zero(label: str, size: float | None, step: float, speedup: float, significant: bool) -> SettingResult:
        options = {**DeepSpeedOptions(zero_stage=2, reduce_bucket_size=size).__dict__}
        return setting(label, options, [], step, speedup, significant)

    own = zero(OWN_LABEL, 5000, 25.7, 1.0, False)
    small, large = zero("reduce-2.5e5", 2.5e5, 14.7, 1.75, True), zero("reduce-5e5", 5e5, 14.9, 1.72, True)
    alike = {OWN_LABEL: [25.0, 26.0, 25.5, 26.5], "reduce-2.5e5": [14.0, 15.5, 14.5, 15.0]}
    steps = {**alike, "reduce-5e5": [14.2, 15.4, 14.8, 15.1]}

    def between(steps):
        return lambda a, b: speedup_ci(steps[a], steps[b], turn=2)

    assert _named_best([own, small, large], own, between(steps), DEEPSPEED) is large
    slower = {**alike, "reduce-5e5": [19.0, 19.5, 19.2, 19.4]}  # better than own, slower than 2.5e5 beyond the noise
    named = _named_best([own, small, zero("reduce-5e5", 5e5, 19.3, 1.33, True)], own, between(slower), DEEPSPEED)
    assert named is small
    verdict = recommend([own, small, large], own, DEEPSPEED, own=True, named=large)
    assert (verdict.outcome, verdict.fastest) == ("best", "reduce-2.5e5")  # the larger named, the fastest said
