"""Rank 1 stops in its third step (a dead data source, say) and never reaches the next all-reduce. Its process
group has torch's default timeout (30 minutes): commprof's --timeout bounds it."""

import os
import time

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 16))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if step == 3 and os.environ["RANK"] == "1":
        time.sleep(3600)
    model(torch.randn(4, 16)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
