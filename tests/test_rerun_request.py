"""A run is run again (advise) from one copy of its request, every field: resolving `config.request()` gives back
the config the run had, and what was named on the command line stays named."""

import dataclasses
from pathlib import Path

from commprof.config import RunConfig, RunRequest
from commprof.launch.resolve import MachineProbe, resolve
from commprof.settings import DDPOptions

FOUR_GPUS = MachineProbe(cuda_available=True, gpu_count=4, nccl_available=True, mpi_available=False)
# every field that a config keeps, away from its default; and not kept by a config: cli_args
NOT_KEPT = {"cli_args"}
AWAY_FROM_DEFAULT = {
    "nodes": 2,
    "gpus": 3,
    "procs": None,
    "device": "cuda",
    "backend": "gloo",
    "model": "convnet",
    "model_size": "medium",
    "strategy": "ddp",
    "batch_size": 7,
    "steps": 40,
    "precision": "bf16",
    "run_id": "first",
    "seed": 3,
    "rdzv_endpoint": "127.0.0.1:29400",
    "local_addr": "10.0.0.2",
    "timeout_s": 45.0,
    "tf32": True,
    "max_steps": 30,
    "whole_run": False,
    "script_output": "rank0",
    "script": ("train.py", "--lr", "0.1"),
    "ddp": DDPOptions(bucket_cap_mb=5.0, gradient_as_bucket_view=True),
    "named": ("timeout_s", "backend", "gradient_as_bucket_view"),
}


def test_every_field_of_the_request_is_run_again(tmp_path: Path):
    fields = {f.name for f in dataclasses.fields(RunRequest)}
    untested = fields - set(AWAY_FROM_DEFAULT) - NOT_KEPT - {"traces_dir", "reports_dir", "schedule"}
    untested -= {"fsdp", "deepspeed", "horovod"}  # their own strategies' options: at their defaults with ddp
    assert not untested, f"RunRequest fields left unset: {sorted(untested)}"
    request = RunRequest(**AWAY_FROM_DEFAULT, traces_dir=tmp_path / "t", reports_dir=tmp_path / "r")
    config = resolve(request, FOUR_GPUS, env={}, launching=False)
    again = config.request()
    for name in fields - NOT_KEPT:
        if name == "named":
            assert set(again.named) == set(request.named)
        else:
            assert getattr(again, name) == getattr(request, name), name
    rerun = resolve(again, FOUR_GPUS, env={}, launching=False)
    assert dataclasses.replace(rerun, launch_id="") == dataclasses.replace(config, launch_id="")
    assert rerun.timeout_given and rerun.backend_given and rerun.ddp_forced == ("gradient_as_bucket_view",)


def test_changes_win_and_a_cpu_run_keeps_its_ranks_as_procs(tmp_path: Path):
    config = RunConfig(run_id="cpu-run", device="cpu", procs_per_node=3, traces_dir=tmp_path, reports_dir=tmp_path)
    again = config.request(run_id="cpu-run-advise", max_steps=12)
    assert (again.procs, again.gpus, again.run_id, again.max_steps) == (3, None, "cpu-run-advise", 12)
    assert again.named == ()
