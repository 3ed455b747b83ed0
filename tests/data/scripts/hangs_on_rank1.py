"""Rank 1 stops in its third step (a dead data source, say) and never reaches the next all-reduce. Its process
group has torch's default timeout (30 minutes): commprof's --timeout bounds it. With an argument, MINUTES, the
group gets a timeout of its own that long (as Lightning, Hugging Face Trainer and DeepSpeed pass one)."""

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

own = {"timeout": timedelta(minutes=float(sys.argv[1]))} if len(sys.argv) > 1 else {}
dist.init_process_group("gloo", **own)
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 16))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if step == 3 and os.environ["RANK"] == "1":
        time.sleep(3600)
    model(torch.randn(4, 16)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
