"""Runs forward and backward through DDP (its gradients all-reduced) but never steps an optimizer."""

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 16))
for _ in range(5):
    model(torch.randn(4, 16)).sum().backward()
