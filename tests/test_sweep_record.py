"""sweep.json is one typed record, whichever way a sweep measured: written, read back equal; an older record (its
DDP builder called "framework") loads; what is not a sweep record is refused with a reason."""

import json

import pytest

from commprof.config import RunConfig
from commprof.plans import SweepPlan
from commprof.results.sweep_record import MeasuredSetting, SweepRecord
from commprof.settings import DDPOptions

OWN, CAPPED = DDPOptions(bucket_cap_mb=None), DDPOptions(bucket_cap_mb=5.0)


def record() -> SweepRecord:
    plan = SweepPlan(run=RunConfig(run_id="tu", script=("train.py",)), settings=(OWN, CAPPED), baseline=OWN, tune=True)
    settings = {
        "script-own": MeasuredSetting({"bucket_cap_mb": None}, [20.0, 21.0], {"0": {"num_buckets_reduced": 2}}),
        "bucket-5mb": MeasuredSetting({"bucket_cap_mb": 5.0}, [19.0, 20.5], applied={"bucket_cap_mb": 5.0}),
    }
    return SweepRecord(plan, settings, "Sequential", 100, 2, built_by="transformers", order=["script-own"] * 2)


def test_a_record_reads_back_as_written():
    written = record()
    assert SweepRecord.from_json(written.to_json()) == written


def test_an_older_record_names_its_ddp_builder_framework():
    data = json.loads(record().to_json())
    data["framework"] = data.pop("built_by")
    data["a field of a later commprof"] = 1
    old = SweepRecord.from_json(json.dumps(data))
    assert old.built_by == "transformers" and old.settings["bucket-5mb"].step_ms == [19.0, 20.5]


def test_what_is_no_sweep_record_is_refused():
    with pytest.raises(ValueError, match="not a sweep record"):
        SweepRecord.from_json(json.dumps({"plan": {}}))
