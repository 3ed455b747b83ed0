"""A sweep's verdict in words (render/verdict_words.py), from the facts analysis/sweep.recommend decides: the script's
own setting named by its buckets, never "the default"; a claim that held or did not in fresh launches."""

import dataclasses

from commprof.analysis.sweep import confirmed_claim, recommend
from commprof.kinds import DDP
from commprof.render.verdict_words import verdict_words, with_verdict_words
from commprof.results.common import Estimate
from commprof.results.report import Report, SettingResult, SweepResult
from commprof.results.store import _build
from commprof.results.sweep_record import Confirmation
from commprof.settings import OWN_LABEL, DDPOptions
from tests.test_script_baseline import CAP_1_BUCKETS, CAP_25_BUCKETS, OWN_BUCKETS, OWN_OPTIONS, setting

OWN = setting(OWN_LABEL, OWN_OPTIONS, OWN_BUCKETS, 20.0, 1.0, False)
CAP1 = setting("bucket-1mb", {**OWN_OPTIONS, "bucket_cap_mb": 1.0}, CAP_1_BUCKETS, 19.8, 1.01, False)
CAP25 = setting("bucket-25mb", {**OWN_OPTIONS, "bucket_cap_mb": 25.0}, CAP_25_BUCKETS, 15.0, 1.33, True)
SCRIPT_OWN = (
    "script-own, as written: no bucket_cap_mb, so DDP's default: a 1 MiB first bucket, then 25 MiB; DDP built 2 "
    "buckets: 1.0, 2.0 MiB"
)


def said(settings: list[SettingResult], baseline: SettingResult, own: bool = True, **kw) -> tuple[str, str | None]:
    verdict = recommend(settings, baseline, DDP, own=own, **kw)
    best = kw.get("named") or max(settings, key=lambda s: s.speedup.value)
    sweep = SweepResult("sweep", baseline.label, best.label, settings, confirmed=kw.get("confirmed"), verdict=verdict)
    return verdict_words(sweep)


def test_the_scripts_own_setting_is_named_by_its_buckets_never_the_default():
    assert said([OWN, CAP1], OWN) == (  # bucket-1mb's 1.01x lies in 0.96-1.06: within ±6% of the script's own
        "DDP's bucket_cap_mb barely matters for this model here: every setting is within ±6% of the script's own "
        f"setting ({SCRIPT_OWN}; 20.0 ms per step), the noise between repeats. Keep the script's own setting.",
        None,
    )
    assert said([OWN, CAP1, CAP25], OWN) == (
        f"bucket-25mb is best: 15.0 ms per step vs 20.0 ms for the script's own setting ({SCRIPT_OWN}), 1.33x faster "
        "(95% CI 1.28-1.38), 25% less step time.",
        "DDP(model, bucket_cap_mb=25)",
    )
    asked = setting(OWN_LABEL, {**OWN_OPTIONS, "bucket_cap_mb": 1}, CAP_1_BUCKETS, 14.0, 1.0, False)
    slower = dataclasses.replace(CAP25, speedup=Estimate(0.7, 0.65, 0.75))  # slower beyond the noise
    text, _ = said([asked, slower], asked)
    assert text.startswith("The script's own setting (script-own, as written: bucket_cap_mb=1 as the script passes it;")
    assert text.endswith("is the fastest setting measured. Keep it.")
    for case in ([OWN, CAP1], [OWN, CAP1, CAP25], [asked, slower]):
        assert "the default" not in said(case, case[0])[0]
    base = setting("bucket-25mb", DDPOptions().__dict__, CAP_25_BUCKETS, 15.0, 1.0, False)  # a built-in model's
    assert said([base, CAP1], base, own=False)[0].startswith(
        "DDP's bucket_cap_mb barely matters for this model here: every setting is within ±6% of the baseline "
        "(bucket-25mb: DDP built one bucket of 3.0 MiB; 15.0 ms per step), the noise between repeats."
    )


def test_a_claim_that_did_or_did_not_hold_in_fresh_launches():
    held = confirmed_claim(Confirmation("bucket-25mb", [[100.0, 100.0], [110.0, 112.0]] * 2, [[80.0, 81.0]] * 4))
    refuted = confirmed_claim(
        Confirmation("bucket-25mb", [[100.0], [110.0], [105.0], [100.0]], [[101.0], [108.0], [106.0], [99.0]])
    )
    text, paste = said([OWN, CAP25], OWN, named=CAP25, confirmed=refuted)
    assert paste is None and text.startswith("bucket-25mb ran 15.0 ms per step vs 20.0 ms")
    assert f"did not hold in 4 fresh interleaved pairs of launches against it: {refuted.speedup.value:.2f}x" in text
    assert text.endswith("Keep the script's own setting.")
    text, paste = said([OWN, CAP25], OWN, named=CAP25, confirmed=held)
    assert paste == "DDP(model, bucket_cap_mb=25)" and text.startswith("bucket-25mb is best: 15.0 ms per step")
    assert f"It held in 4 fresh interleaved pairs of launches: {held.speedup.value:.2f}x" in text
    assert "fresh" not in said([OWN, CAP25], OWN, named=CAP25)[0]  # a built-in model's: no pairs


def test_report_json_keeps_the_verdict_and_carries_its_words():
    verdict = recommend([OWN, CAP1, CAP25], OWN, DDP, own=True)
    sweep = SweepResult("sweep", OWN_LABEL, "bucket-25mb", [OWN, CAP1, CAP25], verdict=verdict)
    written = with_verdict_words(Report("s", "sweep", "", [], [], [], sweep=sweep)).to_dict()
    assert written["sweep"]["paste"] == "DDP(model, bucket_cap_mb=25)"
    assert written["sweep"]["recommendation"].startswith("bucket-25mb is best")
    assert _build(Report, written).sweep.verdict == verdict
    older = {**written["sweep"], "verdict": None}  # a sweep written before verdicts were facts: its own words
    assert verdict_words(_build(SweepResult, older)) == (written["sweep"]["recommendation"], written["sweep"]["paste"])


def test_the_larger_of_two_sizes_that_run_alike_is_named_and_the_fastest_said():
    from commprof.kinds import DEEPSPEED
    from commprof.settings import DeepSpeedOptions

    def zero(label: str, size: float, step: float, speedup: float) -> SettingResult:
        options = {**DeepSpeedOptions(zero_stage=2, reduce_bucket_size=size).__dict__}
        return setting(label, options, [], step, speedup, speedup > 1)

    own, small = zero(OWN_LABEL, 5000, 25.7, 1.0), zero("reduce-2.5e5", 2.5e5, 14.7, 1.75)
    large = zero("reduce-5e5", 5e5, 14.9, 1.72)
    verdict = recommend([own, small, large], own, DEEPSPEED, own=True, named=large)
    sweep = SweepResult("sweep", OWN_LABEL, large.label, [own, small, large], strategy="deepspeed", verdict=verdict)
    text, paste = verdict_words(sweep)
    assert text.startswith("reduce-5e5 is best: 14.9 ms per step vs 25.7 ms") and text.endswith(
        "reduce-2.5e5 ran 14.7 ms per step (1.75x), not faster beyond the noise: the larger size is named, which a "
        "rerun's noise does not flip."
    )
    assert paste is not None and paste.startswith('"zero_optimization": {"reduce_bucket_size": 5e5}')


def test_comparisons_verdict_in_words():
    from commprof.commands.compare import verdict
    from commprof.render.compare import verdict_text
    from commprof.results.compare import CompareResult
    from tests.test_compare_summary import ran

    def said(*rows) -> str:
        return verdict_text(CompareResult("c", list(rows), verdict=verdict(list(rows))))

    text = said(ran("gloo", [20.0, 21.0, 19.5, 20.5, 20.2]), ran("mpi", [10.0, 10.5, 9.8, 10.2, 10.1]))
    assert text.startswith("mpi wins: 2.00x faster than gloo (95% CI ")
    assert "the job's step without the profiler: 10.1 ms against 20.2 ms" in text
    steady = said(ran("gloo", [10.2, 10.21, 10.22, 10.2, 10.21]), ran("mpi", [10.0, 10.01, 10.02, 10.0, 10.01]))
    assert steady.startswith("No significant difference between mpi and gloo: 1.02x")
    assert "too few unprofiled steps" in said(ran("gloo", [20.0]), ran("mpi", [10.0]))
    tight = [10.0, 10.01, 10.02, 10.0, 10.01]
    text = said(ran("gloo", tight, [20.0, 24.0, 18.0]), ran("mpi", tight, [10.0, 12.0, 9.0]))
    assert text.startswith("mpi wins: 2.00x faster than gloo (95% CI 2.00-2.00, over 3 interleaved launches each;")
    assert said(ran("gloo", [20.0])) == "Only gloo could run here (20.0 ms per step)."
    assert verdict_text(CompareResult("c", [], summary="older words")) == "older words"


def test_advises_table_sets_each_findings_predicted_gain_beside_the_measured_one():
    """test_advise.py: a finding of bucket_cap_mb=5 predicted 2.0 ms [1.0, 3.0]; the run's own setting has no
    prediction, so no row."""
    from commprof.render.findings_text import advice_rows

    advised = dataclasses.replace(
        CAP25, label="bucket-5mb", predicted_gain_ms=Estimate(2.0, 1.0, 3.0), gain_ms=Estimate(5.0, 4.5, 5.5)
    )
    own = dataclasses.replace(OWN, gain_ms=Estimate(0.0, 0.0, 0.0))
    sweep = SweepResult("advise", own.label, advised.label, [own, advised])
    assert advice_rows(sweep) == [
        ("bucket-5mb", "+2.0 (+1.0 to +3.0)", "+5.0 (+4.5 to +5.5)", "+3.0", "holds: faster, beyond the noise")
    ]
