"""Which kind of job a script's first launch built, against the settings a sweep, tune or advise is given:
`check_kind` refuses settings for another kind (`OtherKind`), and `several_models` says what a DDP setting is set on
where the script builds several DDP models."""

from __future__ import annotations

from commprof.errors import UsageError
from commprof.kinds import JobKind, built_kind, kind_of
from commprof.render.job_text import kinds_text, models_text
from commprof.render.kind_words import words_of
from commprof.results.job import BuiltDDP
from commprof.results.run_record import RunRecord
from commprof.settings import SettingOptions


def several_models(run: RunRecord, baseline: SettingOptions) -> str:
    """What a setting is set on, in a script with several DDP models: every one at once, or one (--ddp-model)."""
    names = [b.label for b in run.job.of(BuiltDDP)]
    target = getattr(baseline, "ddp_model", None)
    if target is not None and target not in names:  # refused as a setting of another kind is
        built = f"it builds {', '.join(names)}" if names else "it builds no DDP"
        raise OtherKind(f"--ddp-model {target}", f"the script builds no DDP of that name; {built}")
    return models_text(names, target)


def several_kinds(run: RunRecord, baseline: SettingOptions) -> str:
    """What the settings vary, in a script that builds models of several kinds (an FSDP encoder and a DDP head):
    their kind's knobs on its models; the others' models as written."""
    return kinds_text(run.job, kind_of(baseline))


class OtherKind(UsageError):
    """The script's first launch built another kind of job than the settings are for: they would do nothing to it.
    `built`: the kind it built (tune then tunes that kind's buckets), None where it built none commprof tunes."""

    def __init__(self, what: str, why: str, built: JobKind | None = None):
        super().__init__(f"{what}: {why}")
        self.what, self.built = what, built


def check_kind(run: RunRecord, baseline: SettingOptions) -> None:
    """After the script's first launch: the settings are for the kind of job it built, else OtherKind names the
    knob that would act."""
    kind = kind_of(baseline)
    if kind.built(run) is not None:
        return
    built = built_kind(run)
    if built is not None:
        instead = words_of(built).instead.format(strategy=kind.strategy)
        raise OtherKind(
            f"the script trains with {words_of(built).trains_with(run)}, not {kind.title}",
            f"{words_of(kind).knobs} do nothing to it; {instead}",
            built,
        )
    raise OtherKind(
        f"the script built no {kind.engine}",
        f"{words_of(kind).knobs} do nothing to it; commprof run -- SCRIPT profiles it as it is",
    )
