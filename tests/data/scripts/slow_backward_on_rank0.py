"""Rank 0's backward pass takes 30 ms longer every step: a gradient hook on one parameter sleeps (a slow custom
autograd function, say). The time grows inside the backward, not before the batch; it knows nothing of commprof.

`slow_backward_on_rank0.py [WIDTH]`: with WIDTH, a hidden layer of WIDTH x WIDTH between the two (1,100: 1.3M
parameters, two DDP buckets, the first layer's gradient alone in the second): the sleep falls between the buckets."""

import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
if len(sys.argv) > 1:
    width = int(sys.argv[1])
    model = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
else:
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
