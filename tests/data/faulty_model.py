"""A small MLP that misbehaves on one rank at one step, for the fault tests.

COMMPROF_TEST_FAULT=kill|crash|hang, COMMPROF_TEST_FAULT_RANK (default 1), COMMPROF_TEST_FAULT_STEP
(default 6): at that training step's forward pass the rank SIGKILLs itself, crashes (reads address 0:
SIGSEGV), or sleeps for an hour before the step's gradient all-reduce."""

import ctypes
import os
import signal
import time

import torch
from torch import nn

FAULT = os.environ.get("COMMPROF_TEST_FAULT", "")
FAULT_RANK = int(os.environ.get("COMMPROF_TEST_FAULT_RANK", "1"))
FAULT_STEP = int(os.environ.get("COMMPROF_TEST_FAULT_STEP", "6"))


class Faulty(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
        self.calls = 0

    def forward(self, x):
        if self.training:
            self.calls += 1
            if self.calls == FAULT_STEP and os.environ.get("RANK") == str(FAULT_RANK):
                if FAULT == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if FAULT == "crash":
                    ctypes.string_at(0)
                if FAULT == "hang":
                    time.sleep(3600)
        return super().forward(x)


def build():
    model = Faulty()

    def make_batch(batch_size, generator):
        return torch.randn(batch_size, 64, generator=generator), None

    return model, make_batch
