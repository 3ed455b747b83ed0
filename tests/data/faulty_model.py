"""A small MLP that misbehaves on one rank at one step, for the fault tests and the fault matrix
(benchmarks/check/fault_matrix.py; tests/data/scripts/faulty_script.py misbehaves the same way in a plain script).

COMMPROF_TEST_FAULT=kill|crash|hang|pause|extra|size|dtype|op, COMMPROF_TEST_FAULT_RANK (default 1),
COMMPROF_TEST_FAULT_STEP (default 6): at that training step's forward pass the rank SIGKILLs itself, crashes (reads
address 0: SIGSEGV), sleeps for an hour before the step's gradient all-reduce, or sleeps COMMPROF_TEST_FAULT_SECONDS
(default 6) once (a checkpoint); or the ranks' collectives part: the rank alone all-reduces a float (extra), both
all-reduce 1,000 floats on the rank and 999 on the others (size), 4 floats against 4 int32 (dtype), an all-reduce
against the others' broadcast (op). COMMPROF_TEST_STEP_SLEEP: seconds every step sleeps (a job that goes on long
after its pause)."""

import ctypes
import os
import signal
import time

import torch
import torch.distributed as dist
from torch import nn

FAULT = os.environ.get("COMMPROF_TEST_FAULT", "")
FAULT_RANK = int(os.environ.get("COMMPROF_TEST_FAULT_RANK", "1"))
FAULT_STEP = int(os.environ.get("COMMPROF_TEST_FAULT_STEP", "6"))
FAULT_SECONDS = float(os.environ.get("COMMPROF_TEST_FAULT_SECONDS", "6"))
STEP_SLEEP = float(os.environ.get("COMMPROF_TEST_STEP_SLEEP", "0"))  # every step lasts at least this


def misbehave(step: int) -> None:
    """At training step `step` (from 1): this rank's part of the fault, if it is the one and the step."""
    time.sleep(STEP_SLEEP)
    if step != FAULT_STEP:
        return
    mine = os.environ.get("RANK") == str(FAULT_RANK)
    if mine and FAULT == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mine and FAULT == "crash":
        ctypes.string_at(0)
    if mine and FAULT in ("hang", "pause"):
        time.sleep(3600 if FAULT == "hang" else FAULT_SECONDS)
    if mine and FAULT == "extra":
        dist.all_reduce(torch.ones(1))
    if FAULT == "size":
        dist.all_reduce(torch.ones(1000 if mine else 999))
    if FAULT == "dtype":
        dist.all_reduce(torch.ones(4, dtype=torch.float32 if mine else torch.int32))
    if FAULT == "op":
        t = torch.ones(4)
        dist.all_reduce(t) if mine else dist.broadcast(t, src=FAULT_RANK)


class Faulty(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
        self.calls = 0

    def forward(self, x):
        if self.training:
            self.calls += 1
            misbehave(self.calls)
        return super().forward(x)


def build():
    model = Faulty()

    def make_batch(batch_size, generator):
        return torch.randn(batch_size, 64, generator=generator), None

    return model, make_batch
