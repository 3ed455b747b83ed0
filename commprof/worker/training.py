"""One training setup (DDP, or FSDP2 with --strategy fsdp) and its step: shared by `run` and the sweep workers."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import torch
from torch import nn

from commprof.instrument.ddp import CommTiming, ddp_logging_data, wrap_ddp
from commprof.instrument.fsdp import shard
from commprof.instrument.profiler import cuda_synchronize
from commprof.settings import DDPOptions, FSDPOptions, SettingOptions
from commprof.workloads.workload import Workload, call_model, to_device

DISTINCT_BATCHES = 4
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def make_batches(workload: Workload, batch_size: int, seed: int, rank: int, device: torch.device) -> list[Any]:
    """A few synthetic batches made up front, so data creation is never part of a step."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + rank)
    return [to_device(workload.make_batch(batch_size, gen), device) for _ in range(DISTINCT_BATCHES)]


class Trainer:
    """A model wrapped in DDP (or sharded with FSDP2) with its optimizer; `step()` runs one optimizer step and
    times it. `timing`: DDP's comm hook is wrapped in it (the whole-run record, worker/step_ledger.py)."""

    def __init__(
        self,
        model: nn.Module,
        workload: Workload,
        batches: list[Any],
        options: SettingOptions,
        device: torch.device,
        precision: str,
        mpi_gradients: bool = False,
        ddp_logging_every_step: bool = True,
        timing: CommTiming | None = None,
    ):
        self.is_ddp = isinstance(options, DDPOptions)
        self.accum = 1
        if isinstance(options, DDPOptions):
            self.ddp: Any = wrap_ddp(model.to(device), options, device, mpi_gradients, timing)
            if ddp_logging_every_step:
                self.ddp._set_ddp_runtime_logging_sample_rate(1)  # DDP's own averages then cover every step
            self.accum = options.grad_accum
        else:  # the model itself, sharded in place (a built-in model trains with DDP or FSDP: RunConfig)
            assert isinstance(options, FSDPOptions)
            self.ddp = shard(model.to(device), options)
        self.optimizer = torch.optim.SGD(self.ddp.parameters(), lr=1e-3, momentum=0.9)
        self.loss = workload.loss
        self.batches = batches
        self.device = device
        self.use_cuda = device.type == "cuda"
        self.amp_dtype = _DTYPES.get(precision)
        self.scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
        self.steps_done = 0

    def ddp_logging_data(self) -> dict[str, Any]:
        """DDP's own measurements, to cross-check the traces; none for FSDP."""
        return ddp_logging_data(self.ddp) if self.is_ddp else {}

    def step(self) -> float:
        """One optimizer step, timed (GPU work included); milliseconds."""
        cuda_synchronize(self.use_cuda)
        start = time.perf_counter()
        self.train_step()
        cuda_synchronize(self.use_cuda)
        return (time.perf_counter() - start) * 1e3

    def train_step(self) -> None:
        """One optimizer step over `accum` micro-batches (all but the last under no_sync), untimed."""
        for micro in range(self.accum):
            inputs, target = self.batches[(self.steps_done * self.accum + micro) % len(self.batches)]
            sync = self.ddp.no_sync() if micro < self.accum - 1 else contextlib.nullcontext()
            with sync:
                with torch.autocast(
                    self.device.type, dtype=self.amp_dtype or torch.float32, enabled=self.amp_dtype is not None
                ):
                    loss = self.loss(call_model(self.ddp, inputs), target) / self.accum
                self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.steps_done += 1
