"""run.json is written and read through one typed record (results/run_record.py): what is written comes back equal,
a record from an older commprof (no version, fields it never had) loads with their defaults, and text that is not a
run record is refused."""

import dataclasses
import json
import socket
from pathlib import Path

import pytest
import torch

from commprof.config import ProfileSchedule, RunConfig
from commprof.launch.runlog import mark_failed, read_run_json, write_run_json
from commprof.launch.step_log import StepLog, read_step_logs
from commprof.results.job import BuiltDDP, BuiltFSDP
from commprof.results.report import Report
from commprof.results.run_record import RUN_RECORD_VERSION, ClockOffset, ProbedSize, RankRecord, RunRecord
from commprof.results.store import load_report, save_result
from commprof.settings import DDPOptions

# what commprof wrote before the record had a version, a link probe or per-parameter sizes, with a config key that
# no longer exists
OLD_RUN_JSON = {
    "run_id": "old",
    "status": "complete",
    "config": {
        "run_id": "old",
        "device": "cpu",
        "backend": "gloo",
        "nodes": 1,
        "procs_per_node": 2,
        "model": "mlp",
        "model_size": "small",
        "batch_size": 32,
        "steps": 20,
        "seed": 0,
        "precision": "fp32",
        "schedule": {"wait": 5, "warmup": 2, "active": 10},
        "ddp": {"bucket_cap_mb": 10.0},
        "traces_dir": "traces",
        "reports_dir": "reports",
        "retired_option": True,
    },
    "world_size": 2,
    "hosts": ["node1"],
    "clock_offsets": [{"host": "node1", "offset_us": 0.0, "round_trip_us": 0.0}],
    "ranks": [{"rank": 0, "host": "node1", "step_ms": [10.0, 11.0]}, {"rank": 1, "host": "node1", "step_ms": [9.0]}],
}


def test_what_is_written_comes_back_equal(tmp_path):
    record = RunRecord(
        run_id="r",
        config=RunConfig(run_id="r", script=("train.py", "--epochs", "2"), ddp=DDPOptions(bucket_cap_mb=5.0)),
        world_size=2,
        versions={"torch": torch.__version__},  # a str subclass
        clock_offsets=[ClockOffset("a", 0.0, 0.0), ClockOffset("b", 120.5, 30.0)],
        link_probe=[ProbedSize(4096, [200.0, 190.0])],
        ranks=[RankRecord(rank=0, host="a", step_ms=[1.5, 2.5], peak_memory_mb={"rss": 500.0})],
    )
    write_run_json(tmp_path, record)
    assert read_run_json(tmp_path) == record
    assert json.loads((tmp_path / "run.json").read_text())["version"] == RUN_RECORD_VERSION


def test_an_older_run_json_loads_with_the_fields_it_lacks_at_their_defaults(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(OLD_RUN_JSON))
    record = read_run_json(tmp_path)
    assert record.config.schedule == ProfileSchedule(5, 2, 10) and record.config.ddp.bucket_cap_mb == 10.0
    assert record.config.strategy == "ddp" and record.config.launch_id == ""  # fields it never had
    assert [r.step_ms for r in record.ranks] == [[10.0, 11.0], [9.0]]
    assert record.link_probe == [] and record.parameter_sizes is None
    assert record.clock_offsets == [ClockOffset("node1", 0.0, 0.0)]
    # commprof's own model: its job described from its config, as a script's DDP is described from what it built
    (built,) = record.job.built
    assert (built.kind, built.built_by, built.applied["bucket_cap_mb"]) == ("ddp", "commprof", 10.0)


def test_a_scripts_older_run_json_gets_its_job_from_its_lists_of_what_it_built(tmp_path):
    """Before the job was one value, a run.json held a list per kind (ddp_built, fsdp_built, ...): each becomes an
    instance of the job, with its kind; the kinds in their one order, whatever order the lists came in."""
    old = {
        **OLD_RUN_JSON,
        "script": ["enc.py"],
        "config": {**OLD_RUN_JSON["config"], "script": ["enc.py"]},
        "fsdp_built": [{"module": "Sequential", "name": "encoder", "units": ["Linear", "Sequential"]}],
        "ddp_built": [{"module": "Sequential", "name": "head", "asked": {"bucket_cap_mb": 1}}],
    }
    (tmp_path / "run.json").write_text(json.dumps(old))
    job = read_run_json(tmp_path).job
    assert [(b.kind, b.label) for b in job.built] == [("ddp", "head"), ("fsdp", "encoder")]
    assert job.kinds == ("ddp", "fsdp") and job.kind == "ddp" and job.first(BuiltFSDP).units == ["Linear", "Sequential"]
    assert job.named(BuiltDDP, "head").asked == {"bucket_cap_mb": 1} and job.named(BuiltDDP, "nobody").label == "head"
    summary = read_run_json(tmp_path).summary()
    report = Report("r", "run", "", [], [], [], run=summary)
    save_result(report, tmp_path)
    assert load_report(tmp_path).run == summary  # the job, each instance with its kind, survives report.json
    older = json.loads((tmp_path / "report.json").read_text())
    older["run"] = {k: v for k, v in older["run"].items() if k != "job"} | {"ddp_built": old["ddp_built"]}
    (tmp_path / "report.json").write_text(json.dumps(older))
    assert [b.label for b in load_report(tmp_path).run.job.built] == ["head"]  # an older report's run, upgraded


def test_a_failed_run_keeps_its_record_and_says_how_far_each_rank_got(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({**OLD_RUN_JSON, "status": "running"}))
    (tmp_path / "rank0.steps.json").write_text(json.dumps({"rank": 0, "host": "a", "steps_done": 3, "step_ms": []}))
    (tmp_path / "rank1.steps.json").write_text(json.dumps({"rank": 1, "host": "a", "steps_done": 1, "step_ms": []}))
    mark_failed(tmp_path, "rank 1 was killed")
    record = read_run_json(tmp_path)
    assert (record.status, record.error, record.steps_completed) == ("failed", "rank 1 was killed", 1)
    assert record.steps_done_by_rank == {"0": 3, "1": 1} and record.config.run_id == "old"


def test_a_step_log_counts_every_step_and_keeps_the_times_of_the_first_it_is_told_to(tmp_path):
    """A long run's step files stop growing: past `kept` steps, a step is counted, its time not kept. A rank killed
    between two writes of its JSON log is known to its last step: from its lines up to `kept`, then its counter."""
    log = StepLog(tmp_path, 0, "a", kept=3)
    for ms in (10.0, 11.0):
        log.add(ms)
    log.write()
    log.add(12.0)  # killed here: the lines know 3 steps, the JSON 2
    assert read_step_logs(tmp_path)[0]["steps_done"] == 3 and read_step_logs(tmp_path)[0]["step_ms"] == [10, 11, 12]
    for ms in (13.0, 14.0):
        log.add(ms)
    assert (read_step_logs(tmp_path)[0]["steps_done"], read_step_logs(tmp_path)[0]["step_ms"]) == (5, [10, 11, 12])
    log.write()
    assert (log.steps_done, log.last_ms, log.step_ms) == (5, 14.0, [10.0, 11.0, 12.0])
    assert (tmp_path / "rank0.steps.txt").read_text() == "10.0\n11.0\n12.0\n"
    read = read_step_logs(tmp_path)[0]
    assert (read["steps_done"], read["step_ms"], read["host"]) == (5, [10.0, 11.0, 12.0], "a")
    for _ in range(1000):
        log.add(15.0)
    assert read_step_logs(tmp_path)[0]["steps_done"] == 1005  # the counter, rewritten in place
    assert (tmp_path / "rank0.steps.count").stat().st_size == 21


@pytest.mark.parametrize("text", ["not json", "[]", '{"run_id": "x"}', '{"run_id": "x", "config": {"run_id": 3}}'])
def test_text_that_is_not_a_run_record_is_no_record(tmp_path, text):
    (tmp_path / "run.json").write_text(text)
    assert read_run_json(tmp_path) is None


def test_a_reports_run_summary_survives_report_json(tmp_path):
    """report.json's "run" is the typed summary: its configuration (folders as paths, a script as a tuple) comes
    back equal; a report of traces from elsewhere has none, and an older report's {} reads as none."""
    from commprof.results.report import Report
    from commprof.results.store import load_report, save_result

    record = RunRecord.from_json(json.dumps(OLD_RUN_JSON))
    summary = dataclasses.replace(record.summary(), script=["train.py"])
    save_result(Report("r", "run", "", [], [], [], run=summary), tmp_path)
    assert load_report(tmp_path).run == summary
    assert summary.world_size == 2 and summary.backend == "gloo" and summary.config.traces_dir == Path("traces")
    save_result(Report("r", "analysis", "", [], [], []), tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["run"] is None
    (tmp_path / "report.json").write_text(json.dumps({**data, "run": {}}))
    assert load_report(tmp_path).run is None


def test_a_launch_whose_rank_0_was_stopped_before_it_wrote_run_json_records_the_failure_itself(tmp_path):
    """Rank 1 failed first and the launcher stopped rank 0 while it still imported: no run.json yet. The launch
    that hosted rank 0 starts the record, so the run is known to have failed and its logs are kept beside it."""
    from commprof.launch.faults import RankOutcome
    from commprof.launch.launcher import job_failed
    from commprof.results.failure_facts import OwnError

    config = RunConfig(run_id="start", traces_dir=tmp_path / "traces", launch_id="this-launch")
    log_dir = tmp_path / "worker-logs"
    (log_dir / "start_0" / "attempt_0" / "1").mkdir(parents=True)
    outcomes = [RankOutcome(0, "", -15), RankOutcome(1, "FileNotFoundError: no configuration", 1)]
    failed = job_failed(config, outcomes, log_dir)
    record = read_run_json(config.run_dir)
    assert record is not None and (record.status, record.config.launch_id) == ("failed", "this-launch")
    assert record.failure == OwnError(1, socket.gethostname(), "FileNotFoundError: no configuration", 1)
    assert failed.run_dir == config.run_dir
    assert (config.run_dir / "logs").is_dir() and not log_dir.exists()


def test_a_launch_without_rank_0_never_starts_the_record(tmp_path):
    """Another node's launch (ranks 2-3) leaves the run folder to the node of rank 0."""
    from commprof.launch.faults import RankOutcome
    from commprof.launch.launcher import job_failed

    config = RunConfig(run_id="start", traces_dir=tmp_path / "traces", launch_id="other", procs_per_node=2)
    log_dir = tmp_path / "worker-logs"
    log_dir.mkdir()
    failed = job_failed(config, [RankOutcome(2, "", -15), RankOutcome(3, "ValueError: x", 1)], log_dir)
    assert read_run_json(config.run_dir) is None and failed.run_dir is None
