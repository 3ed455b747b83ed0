"""sweep.json: what a sweep, tune or advise measured, one typed record, written by both ways of measuring (a built-in
model's trainers in one launch, worker/sweep.py; a script's launches, commands/script_sweep.py) and read by
commands/reporting.sweep_report. A record from an older commprof loads with the fields it lacks at their defaults;
fields this version does not know are ignored."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from commprof.plans import SweepPlan

SWEEP_RECORD_VERSION = 1
FILE_NAME = "sweep.json"


@dataclass(frozen=True)
class MeasuredSetting:
    """One setting: the options its DDP (or FSDP, or a DeepSpeed script's ZeRO) really had, the job's step (its slowest
    rank's) at each timed step in the order the turns ran, and DDP's own measurements of its profiled steps, by
    rank."""

    options: dict[str, Any]
    step_ms: list[float]
    ddp: dict[str, dict[str, Any]] = field(default_factory=dict)
    asked: dict[str, Any] = field(default_factory=dict)  # a script's: the DDP arguments it passed itself
    applied: dict[str, Any] = field(default_factory=dict)  # a script's: what commprof set on top (DDP's or ZeRO's)
    # a script's: each timed launch's steps (step_ms, cut by launch) and the round it ran in ("1.3": tuning round 1,
    # repeat 3), by which the settings' launches are paired (analysis/launch_stats.py)
    launches: list[list[float]] = field(default_factory=list)
    rounds: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Confirmation:
    """A script's claimed setting measured again against the baseline in fresh interleaved launches before it is
    recommended: each pair's two launches' timed steps, the baseline's first."""

    setting: str  # its label
    baseline: list[list[float]]
    candidate: list[list[float]]


@dataclass(frozen=True)
class SweepRecord:
    plan: SweepPlan  # its settings: every one measured, in the order they were first measured
    settings: dict[str, MeasuredSetting]  # by setting label
    model: str | None
    parameters: int | None
    world_size: int
    version: int = SWEEP_RECORD_VERSION
    versions: dict[str, Any] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=list)  # each rank's (a script's sweep: its launches' own run.json)
    rounds: int = 1  # tune: its tuning rounds
    end_time: str = ""
    order: list[str] = field(default_factory=list)  # the timed turns, by setting label, in the order they ran
    built_by: str = "script"  # what built the DDP, in whose terms the advice is pasted: "script", "transformers", ...
    script: list[str] = field(default_factory=list)  # a script's sweep: the script and its arguments
    max_steps: int | None = None  # a script's sweep: each launch's optimizer steps (None: from the plan)
    applied_on_top: list[str] = field(default_factory=list)  # DDP arguments every setting but the baseline set
    timings: dict[str, float] = field(default_factory=dict)  # where the sweep's time went (docs/benchmarks.md)
    confirmation: Confirmation | None = None  # a script's claim, measured again before it is recommended

    def to_json(self) -> str:
        data = dataclasses.asdict(dataclasses.replace(self, plan=None))  # type: ignore[arg-type]
        return json.dumps({**data, "plan": self.plan.to_dict()}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> SweepRecord:
        """Raises ValueError for text that is not a sweep record."""
        try:
            data = json.loads(text)
            known = {f.name for f in dataclasses.fields(cls)} - {"plan", "settings", "confirmation"}
            settings = {label: MeasuredSetting(**s) for label, s in data["settings"].items()}
            confirmed = data.get("confirmation")
            plan = SweepPlan.from_dict(data["plan"])
            data.setdefault("built_by", data.get("framework", "script"))  # its name before the record was typed
            return cls(
                plan=plan,
                settings=settings,
                confirmation=Confirmation(**confirmed) if confirmed else None,
                **{k: v for k, v in data.items() if k in known},
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a sweep record: {exc}") from None

    @classmethod
    def read(cls, folder: Path) -> SweepRecord:
        return cls.from_json((folder / FILE_NAME).read_text())
