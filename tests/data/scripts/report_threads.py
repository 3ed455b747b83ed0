"""Prints the OpenMP environment and torch's thread count each rank started with, then trains a few steps."""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

print(f"rank {os.environ['RANK']}: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}", flush=True)
dist.init_process_group("gloo")
model = DistributedDataParallel(nn.Linear(32, 32))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(100):
    model(torch.randn(8, 32)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
