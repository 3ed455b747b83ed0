"""Options declared once reach the workers: for every command that launches training, each shared option
given on the command line arrives in the config the ranks receive. Nothing is launched: the one launch
helper (launch.job.run_job) is replaced by one that records what it was given."""

import functools
import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

from commprof import workloads
from commprof.cli.app import app, main
from commprof.cli.options import RUN_OPTIONS
from commprof.config import RunConfig
from commprof.launch import job
from commprof.launch.resolve import MachineProbe
from commprof.plans import SweepPlan
from commprof.settings import DDPOptions, DeepSpeedOptions, FSDPOptions

FOUR_GPUS = MachineProbe(
    cuda_available=True, gpu_count=4, nccl_available=True, mpi_available=False, mpi4py_problem="not installed here"
)
NOT_CONFIG = {"quiet", "json_out"}
# each model built once for the whole file: initialising its weights is most of what a command does here
BUILT_ONCE = functools.cache(workloads.load_workload)


def ddp(field, value):
    return lambda w: all(getattr(d, field) == value for d in w.ddp_settings)


def fsdp(field, value):
    return lambda w: w.config.strategy == "fsdp" and getattr(w.config.fsdp, field) == value


def horovod(field, value):
    return lambda w: w.config.strategy == "horovod" and getattr(w.config.horovod, field) == value


def zero(field, value):
    return lambda w: w.config.strategy == "deepspeed" and getattr(w.config.deepspeed, field) == value


# CLI option -> (its arguments, what the ranks must see); the machine has 4 GPUs, so cpu/gloo are not defaults
CASES = {
    "nodes": (
        ["--nodes", "2", "--rdzv-endpoint", "127.0.0.1:29400", "--run-id", "plumbed"],
        lambda w: w.config.nodes == 2,
    ),
    "gpus": (["--gpus", "3"], lambda w: w.config.procs_per_node == 3 and w.config.device == "cuda"),
    "procs": (["--device", "cpu", "--procs", "3"], lambda w: w.config.procs_per_node == 3),
    "device": (["--device", "cpu"], lambda w: w.config.device == "cpu"),
    "backend": (["--backend", "gloo"], lambda w: w.config.backend == "gloo"),
    "model": (["--model", "convnet"], lambda w: w.config.model == "convnet"),
    "model_size": (["--model-size", "medium"], lambda w: w.config.model_size == "medium"),
    "strategy": (["--strategy", "fsdp"], lambda w: w.config.strategy == "fsdp"),
    "batch_size": (["--batch-size", "7"], lambda w: w.config.batch_size == 7),
    "steps": (["--steps", "40"], lambda w: w.config.steps == 40),
    "precision": (["--precision", "bf16"], lambda w: w.config.precision == "bf16"),
    "run_id": (["--run-id", "plumbed"], lambda w: w.config.run_id.split("-")[0] == "plumbed"),
    "traces_dir": (["--traces-dir", "tdir"], lambda w: w.config.traces_dir == Path("tdir")),
    "reports_dir": (["--reports-dir", "rdir"], lambda w: w.config.reports_dir == Path("rdir")),
    "seed": (["--seed", "5"], lambda w: w.config.seed == 5),
    "rdzv_endpoint": (["--rdzv-endpoint", "127.0.0.1:29400"], lambda w: w.config.rdzv_endpoint == "127.0.0.1:29400"),
    "local_addr": (["--local-addr", "127.0.0.1"], lambda w: w.config.local_addr == "127.0.0.1"),
    "timeout": (["--timeout", "42"], lambda w: w.config.timeout_s == 42),
    "tf32": (["--tf32"], lambda w: w.config.tf32 is True),
    "max_steps": (
        ["--max-steps", "30", "--", "train.py", "--lr", "1"],
        lambda w: w.config.max_steps == 30 and w.config.script == ("train.py", "--lr", "1"),
    ),
    "script_output": (["--script-output", "rank0", "--", "train.py"], lambda w: w.config.script_output == "rank0"),
    "whole_run": (["--no-whole-run"], lambda w: w.config.whole_run is False),
    "wait": (["--wait", "3"], lambda w: w.config.schedule.wait == 3),
    "warmup": (["--warmup", "1"], lambda w: w.config.schedule.warmup == 1),
    "active": (["--active", "4"], lambda w: w.config.schedule.active == 4),
    "schedule": (
        ["--schedule", "4,3,2"],
        lambda w: (w.config.schedule.wait, w.config.schedule.warmup, w.config.schedule.active) == (4, 3, 2),
    ),
    "bucket_cap_mb": (["--bucket-cap-mb", "7.5"], ddp("bucket_cap_mb", 7.5)),
    "comm_hook": (["--comm-hook", "fp16"], ddp("comm_hook", "fp16")),
    "grad_accum": (["--grad-accum", "2"], ddp("grad_accum", 2)),
    "static_graph": (["--static-graph"], ddp("static_graph", True)),
    "gradient_as_bucket_view": (["--gradient-as-bucket-view"], ddp("gradient_as_bucket_view", True)),
    "find_unused_parameters": (["--find-unused-parameters"], ddp("find_unused_parameters", True)),
    "ddp_model": (["--ddp-model", "critic", "--", "train.py"], ddp("ddp_model", "critic")),
    "reshard_after_forward": (
        ["--strategy", "fsdp", "--no-reshard-after-forward"],
        fsdp("reshard_after_forward", False),
    ),
    "forward_prefetch": (["--strategy", "fsdp", "--forward-prefetch", "2"], fsdp("forward_prefetch", 2)),
    "backward_prefetch": (["--strategy", "fsdp", "--backward-prefetch", "3"], fsdp("backward_prefetch", 3)),
    "reduce_dtype": (["--strategy", "fsdp", "--reduce-dtype", "bf16"], fsdp("reduce_dtype", "bf16")),
    "zero_stage": (["--strategy", "deepspeed", "--zero-stage", "3", "--", "train.py"], zero("zero_stage", 3)),
    "reduce_bucket_size": (
        ["--strategy", "deepspeed", "--reduce-bucket-size", "5e7", "--", "train.py"],
        zero("reduce_bucket_size", 5e7),
    ),
    "allgather_bucket_size": (
        ["--strategy", "deepspeed", "--allgather-bucket-size", "2e6", "--", "train.py"],
        zero("allgather_bucket_size", 2e6),
    ),
    "overlap_comm": (["--strategy", "deepspeed", "--no-overlap-comm", "--", "train.py"], zero("overlap_comm", False)),
    "fusion_threshold_mb": (
        ["--strategy", "horovod", "--fusion-threshold-mb", "16", "--", "train.py"],
        horovod("fusion_threshold_mb", 16),
    ),
    "cycle_time_ms": (
        ["--strategy", "horovod", "--cycle-time-ms", "5", "--", "train.py"],
        horovod("cycle_time_ms", 5),
    ),
}
COMMANDS = {
    "run": [],
    "sweep": [],
    "tune": [],
    "compare": ["--backends", "nccl,gloo"],
    "scale": ["--world-sizes", "1,2"],
}
# scale takes these with --nodes (its sizes as node counts): the ranks per node and where the nodes meet
ACROSS_NODES = {"procs", "gpus", "rdzv_endpoint"}
SCALE_ACROSS_NODES = ["--nodes", "1,2", "--rdzv-endpoint", "127.0.0.1:29400", "--run-id", "plumbed"]
RUN_ONLY = {"strategy"}  # the other commands refuse it (test_run_only_options_are_refused_elsewhere); sweep
# takes it and sweeps FSDP's options, which are its own list options (test_fsdp_sweep_grid)


class Launched(Exception):
    pass


@pytest.fixture
def launches(monkeypatch, tmp_path):
    """Run the CLI in-process on a 4-GPU machine; returns what the ranks would have received."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("")  # a user's script, for the options that go with one
    monkeypatch.setattr(MachineProbe, "detect", staticmethod(lambda: FOUR_GPUS))
    monkeypatch.setattr(workloads, "load_workload", BUILT_ONCE)
    seen = []

    def record(config, task=None, total_steps=0, watch=None):
        payload = task.payload
        if "settings" in payload:  # sweep and tune: one config, many DDP settings
            plan = SweepPlan.from_dict(payload)
            seen.append(SimpleNamespace(config=plan.run, ddp_settings=list(plan.settings), plan=plan))
        else:
            worker_config = RunConfig.from_dict(payload)
            seen.append(SimpleNamespace(config=worker_config, ddp_settings=[worker_config.ddp]))
        raise Launched

    monkeypatch.setattr(job, "run_job", record)

    def launch(argv):
        with pytest.raises(Launched):
            main(argv)
        return seen[-1]

    return launch


def accepted(command: str) -> list[str]:
    """The shared options this command takes (sweep's own list-valued --bucket-cap-mb is not the shared one)."""
    (info,) = [c for c in app.registered_commands if c.callback.__name__ == command]
    params = list(inspect.signature(info.callback).parameters.values())
    return [p.name for p in RUN_OPTIONS if p in params and p.name not in NOT_CONFIG]


def test_every_shared_option_has_a_case():
    assert {p.name for p in RUN_OPTIONS} - NOT_CONFIG == set(CASES)


@pytest.mark.parametrize(
    "command, option", [(c, o) for c in COMMANDS for o in accepted(c) if c == "run" or o not in RUN_ONLY]
)
def test_option_reaches_the_workers(launches, command, option):
    args, reached = CASES[option]
    given = SCALE_ACROSS_NODES if command == "scale" and option in ACROSS_NODES else COMMANDS[command]
    worker = launches([command, *given, "--quiet", *args])
    assert reached(worker), (command, option, worker.config, worker.ddp_settings)


REFUSED = {
    "tune": "tune of a built-in model (FSDP's options: commprof sweep --strategy fsdp)",
    "compare": "compare, which runs DDP (to compare DDP with FSDP: --strategies ddp,fsdp)",
    "scale": "scale, which runs DDP on commprof's own model; a script that shards its model itself scales as it is: "
    "commprof scale -- SCRIPT",
}


@pytest.mark.parametrize("command", REFUSED)
def test_run_only_options_are_refused_elsewhere(launches, command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, *COMMANDS[command], "--quiet", "--strategy", "fsdp"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: --strategy fsdp is not for commprof {REFUSED[command]}"


def test_fsdp_sweep_grid(launches):
    worker = launches(
        ["sweep", "--strategy", "fsdp", "--forward-prefetch", "0,1", "--reduce-dtype", "fp32,bf16", "--quiet"]
    )
    assert worker.config.strategy == "fsdp" and worker.config.fsdp == FSDPOptions()
    assert {
        (s.reshard_after_forward, s.forward_prefetch, s.backward_prefetch, s.reduce_dtype) for s in worker.ddp_settings
    } == {
        (reshard, prefetch, 1, dtype) for reshard in (True, False) for prefetch in (0, 1) for dtype in ("fp32", "bf16")
    }


@pytest.mark.parametrize(
    "argv, error",
    [
        (
            ["sweep", "--strategy", "fsdp", "--bucket-cap-mb", "5,25"],
            "--bucket-cap-mb: not swept with --strategy fsdp (it sweeps --reshard-after-forward, --forward-prefetch, "
            "--backward-prefetch, --reduce-dtype)",
        ),
        (
            ["sweep", "--forward-prefetch", "1,2"],
            "--forward-prefetch: not swept with --strategy ddp (it sweeps --bucket-cap-mb, --comm-hook, --grad-accum, "
            "--static-graph, --gradient-as-bucket-view)",
        ),
        (
            ["sweep", "--strategy", "fsdp", "--backward-prefetch", "0,1"],
            "--backward-prefetch must be >= 1 (FSDP2 always prefetches one block in backward), got 0",
        ),
        (
            ["run", "--no-reshard-after-forward", "--reduce-dtype", "bf16"],
            "--reshard-after-forward, --reduce-dtype: FSDP options; they need --strategy fsdp",
        ),
        (["run", "--strategy", "fsdp", "--reduce-dtype", "fp64"], "--reduce-dtype must be one of fp32, bf16, fp16"),
    ],
)
def test_fsdp_options_refused_where_they_do_not_apply(launches, capsys, argv, error):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv[:1], "--quiet", *argv[1:]])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: {error}"


def test_a_zero_sweep_launches_the_scripts_own_config_first_then_its_settings(launches, capsys):
    """--strategy deepspeed: ZeRO's options are swept ("own": the script's config); the baseline sets none."""
    argv = ["--quiet", "--strategy", "deepspeed", "--reduce-bucket-size", "own,1e6", "--overlap-comm", "false"]
    worker = launches(["sweep", *argv, "--max-steps", "9", "--", "train.py"])
    assert worker.config.run_id.endswith("script-own-r1.1") and worker.config.deepspeed == DeepSpeedOptions()
    assert worker.config.strategy == "deepspeed" and worker.config.ddp_forced == ()
    for argv, error in (
        (["run", "--reduce-bucket-size", "5e5", "--", "train.py"], "--reduce-bucket-size: DeepSpeed's ZeRO options; "),
        (["run", "--strategy", "deepspeed"], "--strategy deepspeed is for a DeepSpeed script, given after -- "),
        (["sweep", "--strategy", "deepspeed", "--comm-hook", "fp16", "--", "train.py"], "--comm-hook: not swept with "),
    ):
        with pytest.raises(SystemExit):
            main([*argv[:1], "--quiet", *argv[1:]])
        assert capsys.readouterr().err.startswith(f"error: {error}")


def test_sweep_grid_keeps_the_options_it_does_not_sweep(launches):
    worker = launches(
        ["sweep", "--bucket-cap-mb", "5,25", "--comm-hook", "none,fp16", "--find-unused-parameters", "--quiet"]
    )
    assert {(d.bucket_cap_mb, d.comm_hook) for d in worker.ddp_settings} == {
        (5, "none"),
        (5, "fp16"),
        (25, "none"),
        (25, "fp16"),
    }
    assert all(d.find_unused_parameters for d in worker.ddp_settings)


def test_tune_grid_keeps_the_ddp_options(launches):
    worker = launches(["tune", "--comm-hook", "bf16", "--quiet"])
    assert len(worker.ddp_settings) > 3 and all(d.comm_hook == "bf16" for d in worker.ddp_settings)
    # mlp-small's 4 MiB weights: 1, 5, 25 and 100 MB each build other buckets, so each is measured
    assert {1.0, 5.0, 25.0, 100.0} <= {d.bucket_cap_mb for d in worker.ddp_settings}


@pytest.mark.parametrize("command", ["sweep", "tune"])
def test_a_scripts_first_launch_is_the_script_as_written_for_max_steps(launches, command):
    """The baseline launches first: no bucket_cap_mb and nothing forced, so its DDP is the script's own; it runs
    --max-steps optimizer steps."""
    worker = launches([command, "--quiet", "--max-steps", "9", "--warmup-steps", "2", "--", "train.py"])
    assert worker.config.run_id.endswith("script-own-r1.1") and worker.config.max_steps == 9
    assert worker.config.ddp == DDPOptions(bucket_cap_mb=None) and worker.config.ddp_forced == ()
    assert not worker.config.profiled  # a timed launch


@pytest.mark.parametrize(
    "argv, error",
    [
        (
            ["sweep", "--max-steps", "9"],
            "--max-steps is for a script (commprof sweep -- train.py); a built-in model's sweep runs --warmup-steps "
            "+ --steps-per-repeat steps per setting and round",
        ),
        (
            ["tune", "--max-steps", "9", "--steps-per-repeat", "4", "--", "train.py"],
            "--max-steps and --steps-per-repeat: give one (each launch runs --max-steps, the first --warmup-steps "
            "untimed; or --warmup-steps + --steps-per-repeat)",
        ),
        (
            ["sweep", "--max-steps", "5", "--", "train.py"],
            "--max-steps 5 is too few: each launch drops its first --warmup-steps 3, and the profiled one records "
            "1 + --profile-steps 3 after them; give 7 or more",
        ),
    ],
)
def test_max_steps_refused_where_it_cannot_hold(launches, capsys, argv, error):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv[:1], "--quiet", *argv[1:]])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: {error}"


@pytest.mark.parametrize(
    "args, forced",
    [
        ([], ()),
        (["--bucket-cap-mb", "25"], ("bucket_cap_mb",)),  # DDP's default, named: the script's own cap gives way
        (["--bucket-cap-mb", "50", "--no-static-graph"], ("bucket_cap_mb", "static_graph")),
        (["--max-steps", "30", "--comm-hook", "none"], ()),  # not DDP's arguments
    ],
)
def test_ddp_arguments_named_on_the_command_line_reach_a_script_even_at_their_default(launches, args, forced):
    """A script that asks DDP for bucket_cap_mb=100 gets 25 with --bucket-cap-mb 25, though 25 is the default."""
    worker = launches(["run", "--quiet", *args, "--", "train.py"])
    assert worker.config.ddp_forced == forced


@pytest.mark.parametrize("command", ["sweep", "tune"])
def test_a_ddp_argument_named_for_every_setting_reaches_the_scripts_own_baseline(launches, command):
    """`--no-find-unused-parameters`, DDP's default, named: even the script-own launch sets it over a script's
    True."""
    worker = launches([command, "--quiet", "--no-find-unused-parameters", "--max-steps", "9", "--", "train.py"])
    assert worker.config.run_id.endswith("script-own-r1.1")
    assert worker.config.ddp_forced == ("find_unused_parameters",)


# each of SweepOptions' options (declared once, in commprof.plans) -> (its arguments, what the plan must hold)
SWEEP_CASES = {
    "repeats": (["--repeats", "3"], lambda plan: plan.repeats == 3),
    "steps_per_repeat": (["--steps-per-repeat", "6"], lambda plan: plan.steps_per_repeat == 6),
    "warmup_steps": (["--warmup-steps", "2"], lambda plan: plan.warmup_steps == 2),
    "profile_steps": (["--profile-steps", "4"], lambda plan: plan.profile_steps == 4),
    "max_live_settings": (["--max-live-settings", "1"], lambda plan: plan.max_live_settings == 1),
    "max_repeats": (["--max-repeats", "7"], lambda plan: plan.repeat_budget == 7),
}


def test_every_sweep_option_has_a_case():
    from commprof.config import option_fields
    from commprof.plans import SweepOptions

    assert {f.name for f in option_fields(SweepOptions)} == set(SWEEP_CASES)


@pytest.mark.parametrize("command, option", [(c, o) for c in ("sweep", "tune") for o in SWEEP_CASES])
def test_sweep_option_reaches_the_plan(launches, command, option):
    args, reached = SWEEP_CASES[option]
    assert reached(launches([command, "--quiet", *args]).plan), (command, option)


@pytest.mark.parametrize(
    "argv, error",
    [
        (["sweep", "--repeats", "1"], "--repeats must be >= 2 (a confidence interval needs repeats)"),
        (["tune", "--steps-per-repeat", "0"], "--steps-per-repeat must be >= 1"),
        (["tune", "--repeats", "4", "--max-repeats", "3"], "--max-repeats must be >= --repeats (4), got 3"),
        (["advise", "r", "--warmup-steps", "0"], "--warmup-steps must be >= 1"),
        (["bench", "--bursts", "1"], "--bursts must be >= 2, got 1"),
        (["bench", "--dtype", "float8"], "--dtype must be one of float32, float16, bfloat16, float64, int32"),
    ],
)
def test_options_are_validated_where_they_are_declared(launches, capsys, argv, error):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2 and error in capsys.readouterr().err


BENCH_CASES = {
    "factor": (["--factor", "2"], lambda plan: plan.factor == 2),
    "dtype": (["--dtype", "bfloat16"], lambda plan: plan.dtype == "bfloat16"),
    "warmup": (["--warmup", "0"], lambda plan: plan.warmup == 0),
    "iters": (["--iters", "7"], lambda plan: plan.iters == 7),
    "bursts": (["--bursts", "3"], lambda plan: plan.bursts == 3),
    "ops": (["--ops", "broadcast,send_recv"], lambda plan: plan.ops == ("broadcast", "send_recv")),
    "sizes": (
        ["--min-bytes", "4K", "--max-bytes", "1M"],
        lambda plan: (plan.min_bytes, plan.max_bytes) == (4096, 2**20),
    ),
}


def test_every_bench_option_has_a_case():
    from commprof.config import option_fields
    from commprof.plans import BenchPlan

    assert {f.name for f in option_fields(BenchPlan)} <= set(BENCH_CASES)


@pytest.mark.parametrize("option", BENCH_CASES)
def test_bench_option_reaches_the_ranks(monkeypatch, tmp_path, option):
    from commprof.commands import bench

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(MachineProbe, "detect", staticmethod(lambda: FOUR_GPUS))
    seen = []

    def record(backend, plan, *args):
        seen.append(plan)
        raise Launched

    monkeypatch.setattr(bench, "_measure", record)
    args, reached = BENCH_CASES[option]
    with pytest.raises(Launched):
        main(["bench", "--device", "cpu", "--quiet", *args])
    assert reached(seen[-1]), seen[-1]
