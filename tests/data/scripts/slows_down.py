"""A run that changes: every rank computes for COMPUTE_MS a step until step AT, then for SLOW_MS, to step STEPS (a
neighbour's job that came onto the node, a thermal limit).

    slows_down.py AT STEPS COMPUTE_MS SLOW_MS    e.g. slows_down.py 100 250 20 80"""

import sys
import time

import torch
import torch.distributed as dist
from torch import nn

at, steps, compute_ms, slow_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(64, 64))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, steps + 1):
    time.sleep((slow_ms if step >= at else compute_ms) / 1000)  # the step's computation
    model(torch.randn(8, 64)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
print(f"rank {dist.get_rank()} ran {steps} steps")
dist.destroy_process_group()
