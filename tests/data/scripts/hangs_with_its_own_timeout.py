"""As tests/data/scripts/hangs_on_rank1.py, but the script gives its process group a timeout of its own, 10 minutes
(as Lightning, Hugging Face Trainer and DeepSpeed do): only commprof's --timeout can bound it."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo", timeout=timedelta(minutes=10))
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 16))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if step == 3 and os.environ["RANK"] == "1":
        time.sleep(3600)
    model(torch.randn(4, 16)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
