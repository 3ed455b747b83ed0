"""Rank 1 raises at its third optimizer step; rank 0 is left waiting in its next all-reduce."""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo", timeout=timedelta(seconds=20))
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 16))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if step == 3 and os.environ["RANK"] == "1":
        raise ValueError("batch 3 has a NaN label")
    model(torch.randn(4, 16)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
