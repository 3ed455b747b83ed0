"""Rank 1's next batch takes 40 ms longer to arrive (a slow data source, say); it knows nothing of commprof."""

import os
import time

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _step in range(1000):
    if os.environ["RANK"] == "1":
        time.sleep(0.04)
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
