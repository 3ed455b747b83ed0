"""Rank 1's optimizer step takes 25 ms longer: a hook of its own, registered on every optimizer's step (logging, an
EMA of the weights, a checkpoint), runs after the update; it knows nothing of commprof."""

import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
if os.environ["RANK"] == "1":
    register_optimizer_step_post_hook(lambda *_: time.sleep(0.025))
for _step in range(1000):
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
