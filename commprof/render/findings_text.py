"""The findings and `commprof advise`'s verdicts as text, for every renderer."""

from __future__ import annotations

from typing import cast

from commprof.render.finding_words import WEIGHS, words
from commprof.results.common import PRACTICAL_SHARE, Estimate, interval_text, signed
from commprof.results.report import Finding, Report


def balanced(report: Report) -> str:
    """The balanced line, naming what was checked for each kind of job the run holds (all for traces from
    elsewhere, or a report that does not say)."""
    checked = ", ".join(WEIGHS[kind] for kind in (report.checked if report.checked is not None else WEIGHS))
    return (
        f"Nothing to gain beyond the noise: none of what was checked ({checked}) predicts a gain whose 95% interval "
        f"excludes zero and that is {PRACTICAL_SHARE:.0%} of the step or more"
    )


def finding_gain(finding: Finding) -> str:
    gain = finding.gain_ms
    if gain is None:
        return "no step time predicted"
    value, interval = interval_text(gain)
    return f"saves {value} ms per step ({finding.gain_pct:.0f}% of the step, {interval})"


def has_findings(report: Report) -> bool:
    """Runs and analyses are searched for findings; a sweep or tune is itself the comparison of settings."""
    return report.kind in ("run", "analysis")


def finding_lines(report: Report) -> list[tuple[str, str, str]]:
    """Per finding, ranked: (title with its predicted gain, evidence, action); or the balanced line with how large
    the noise is: the largest gain weighed and not claimed, with its interval."""
    said = [words(f) for f in report.findings]
    if any(f.gain_ms is not None for f in report.findings):
        return [
            (f"{i}. {title}: {finding_gain(f)}", evidence, action)
            for i, (f, (title, evidence, action)) in enumerate(zip(report.findings, said, strict=True), 1)
        ]
    found = [
        (f"{title}: {finding_gain(f)}", evidence, action)
        for f, (title, evidence, action) in zip(report.findings, said, strict=True)
    ]  # notes, not gains
    if not report.within_noise:
        return [(balanced(report), "", ""), *found]
    largest = report.within_noise[0]
    gain = cast(Estimate, largest.gain_ms)
    value, interval = interval_text(gain)
    line = (
        f"{balanced(report)}. The largest gain weighed: {words(largest)[0]}, saves {value} ms per step "
        f"({largest.gain_pct:.0f}% of the step, {interval})"
    )
    return [(line, "", ""), *found]


ADVICE_HEADERS = ("setting", "predicted gain ms (95% CI)", "measured gain ms (95% CI)", "error ms", "verdict")


def advice_verdict(significant: bool, speedup: float) -> str:
    """Whether a measured setting bears its finding out, by the claims' one rule (SettingResult.significant)."""
    if significant and speedup > 1:
        return "holds: faster, beyond the noise"
    if significant:
        return "does not hold: slower here"
    return f"not confirmed: inside the noise or under {PRACTICAL_SHARE:.0%} of the step"


def advice_rows(sweep) -> list[tuple[str, ...]]:
    """`commprof advise`: each advised setting's predicted gain against the one measured (error: measured -
    predicted)."""

    def ci(e) -> str:
        return f"{signed(e.value, '.1f')} ({signed(e.low, '.1f')} to {signed(e.high, '.1f')})"

    return [
        (
            s.label,
            ci(s.predicted_gain_ms),
            ci(s.gain_ms),
            signed(s.gain_ms.value - s.predicted_gain_ms.value, ".1f"),
            advice_verdict(s.significant, s.speedup.value),
        )
        for s in sweep.settings
        if s.predicted_gain_ms is not None and s.gain_ms is not None
    ]
