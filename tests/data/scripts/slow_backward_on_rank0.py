"""Rank 0's backward pass takes 30 ms longer every step: a gradient hook on one parameter sleeps (a slow custom
autograd function, say). The time grows inside the backward, not before the batch; it knows nothing of commprof."""

import os
import time

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
if os.environ["RANK"] == "0":
    model[0].weight.register_hook(lambda grad: time.sleep(0.03))  # the first layer's gradient: late in the backward
model = nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _step in range(1000):
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
