"""Averages gradients by hand (all_reduce) instead of wrapping the model in DDP."""

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
model = nn.Linear(32, 32)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(100):
    model(torch.randn(8, 32)).sum().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    optimizer.step()
    optimizer.zero_grad()
