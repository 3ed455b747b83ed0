"""Do no harm at construction (issue 70): a script that builds its model on the meta device and materializes it with
`to_empty` under `torch.__future__.set_swap_module_params_on_conversion(True)` (FSDP2's examples, torchtitan) runs
under commprof as under torchrun. `to_empty` swaps each parameter (`torch.utils.swap_tensors`), which refuses a
tensor that anything holds a weak reference to; torch's profiler with record_shapes holds one to every tensor an op
took, and commprof's start-up profiler records from before the script's first line (instrument/profiler.py,
StartupProfile). One in-process rank over Gloo, the script's code run here with commprof's instrumentation
installed as worker/script.py installs it; the real runs: tests/data/scripts/meta_to_empty.py and meta_fsdp.py in
benchmarks/check/differential.py."""

import faulthandler
import json
import signal
import sys

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from commprof.config import ProfileSchedule, RunConfig
from commprof.instrument.profiler import StartupProfile, release, trace_path, write_trace


@pytest.fixture
def one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


@pytest.fixture
def swap_on_conversion():
    """The flag such scripts set first, as it was afterwards."""
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    yield
    torch.__future__.set_swap_module_params_on_conversion(before)


@pytest.fixture
def session(tmp_path, monkeypatch, one_rank, swap_on_conversion):
    """One rank's ScriptSession, profiled, started as worker/script.py starts it before the script's first line
    (its process-wide settings and signal handlers left as they were); finished after the test."""
    from commprof.worker import script_session

    for name, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(script_session, "device_name", lambda device: "cpu")  # platform's runs `uname -p`
    monkeypatch.setattr(script_session, "configure_rank", lambda device, tf32: None)  # this process's threads
    monkeypatch.setattr(script_session, "bound_default_timeouts", lambda timeout_s: None)
    # the import hooks it adds for DeepSpeed and Horovod, which the script never imports here, go with the test
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path])
    config = RunConfig(
        run_id="meta", script=("train.py",), traces_dir=tmp_path, max_steps=6, schedule=ProfileSchedule(1, 1, 2)
    )
    term = signal.getsignal(signal.SIGTERM)
    made = script_session.ScriptSession(config, tmp_path / "progress.json")
    made.start()
    try:
        yield made
    finally:
        made.finish()
        signal.signal(signal.SIGTERM, term)
        faulthandler.unregister(signal.SIGTERM)


def blocks() -> nn.Sequential:
    return nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.ReLU()) for _ in range(2)], nn.Linear(16, 4))


def materialized(model: nn.Module) -> nn.Module:
    """As the scripts do it: every parameter given memory on the CPU, then its Linear's init."""
    model.to_empty(device="cpu")
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.reset_parameters()
    return model


def test_a_model_built_on_meta_is_materialized_and_trained_under_commprof(session):
    with torch.device("meta"):
        model = blocks()
    weight = model[0][0].weight
    materialized(model)  # before the fix: "Expected no weakrefs to t1's Tensor object but got 4"
    assert model[0][0].weight is weight and weight.device.type == "cpu" and torch.isfinite(weight).all()
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for _ in range(4):
        ddp(torch.randn(8, 16)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    assert session.log.steps_done == 4  # the schedule's window (1, 1, 2) recorded and written as ever
    assert [[612]] in _gloo_sizes(trace_path(session.config.run_dir, 0))  # its one bucket all-reduced, sized


def test_an_fsdp2_model_sharded_on_meta_is_materialized_and_trained_under_commprof(session):
    from torch.distributed.fsdp import fully_shard

    with torch.device("meta"):
        model = blocks()
    for block in model[:2]:
        fully_shard(block)
    fully_shard(model)
    materialized(model)  # DTensor parameters: swapped whatever the flag
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        model(torch.randn(8, 16)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    assert session.log.steps_done == 3 and all(p.device.type == "cpu" for p in model.parameters())


def test_after_the_window_a_swap_finds_no_weak_reference_of_its_records(session):
    """A script that moves its model once the profiler's window closed (to save it, say) under the same flag."""
    model = nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(5):  # the window (1, 1, 2) closes at the 4th step, its records taken with shapes
        model(torch.randn(8, 16)).sum().backward()
        optimizer.step()
    assert session.profiler is None
    model.to(torch.float64)
    assert model.weight.dtype == torch.float64


def _gloo_sizes(path) -> list:
    events = json.loads(path.read_text())["traceEvents"]
    return [e.get("args", {}).get("Input Dims") for e in events if e.get("name") == "gloo:all_reduce"]


def test_the_start_keeps_its_shapes_until_the_script_swaps_a_tensor(tmp_path, one_rank, swap_on_conversion):
    """A script that never swaps keeps its start recorded with shapes (Gloo's collectives give their sizes there
    alone); at the first swap the record so far is let go and the start goes on without them; torch's swap_tensors
    is back once the start-up recording stops."""
    swap = torch.utils.swap_tensors
    kept = StartupProfile(False, tmp_path, 0)
    kept.start()
    dist.all_reduce(torch.ones(272))
    write_trace(kept.stop(), tmp_path / "kept.json")
    assert kept.shapes and _gloo_sizes(tmp_path / "kept.json") == [[[272]]]
    assert torch.utils.swap_tensors is swap

    swapped = StartupProfile(False, tmp_path, 0)
    swapped.start()
    dist.all_reduce(torch.ones(272))  # the record before the swap is let go
    with torch.device("meta"):
        model = nn.Linear(16, 4)
    materialized(model)
    dist.all_reduce(torch.ones(8))
    profile = swapped.stop()
    write_trace(profile, trace_path(tmp_path, 0))
    release(profile)
    assert not swapped.shapes and _gloo_sizes(trace_path(tmp_path, 0)) == [None]
    assert torch.utils.swap_tensors is swap


@pytest.mark.slow
@pytest.mark.parametrize("name", ["meta fsdp2"])  # "meta to_empty": benchmarks/check/differential.py
@pytest.mark.takes(33, "the script under torchrun and under commprof")
def test_a_script_that_builds_on_meta_ends_as_under_torchrun(name, tmp_path):
    """The differential check's rows of issue 70: 2 ranks under torchrun and under `commprof run --`, each rank's
    end, output and steps compared (before: every rank failed in to_empty under commprof alone)."""
    from benchmarks.check.differential import compare, corpus

    (case,) = [c for c in corpus() if c.name == name]
    compared = compare(case, tmp_path)
    assert compared.found == [], compared.verdict
    assert compared.profiled.exit_code == 0
    assert {r: (e.status, e.steps) for r, e in compared.profiled.ranks.items()} == {0: ("0", 12), 1: ("0", 12)}
