"""A plain DDP script whose rank RANK spends 30 ms more in one part of every step, WHERE: `input` (before its batch),
`forward` (a forward pre-hook on its first layer), `backward` (a hook on its first layer's gradient: between DDP's two
buckets with a WIDTH of 1,100, at the backward's end with one bucket), `optimizer` (a hook on every optimizer's step).

    slowed_phase.py WHERE RANK [WIDTH]   (the straggler control grid: benchmarks/check/straggler_grid.py)"""

import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

WHERE, SLOWED = sys.argv[1], int(sys.argv[2])
WIDTH = int(sys.argv[3]) if len(sys.argv) > 3 else 256
dist.init_process_group("gloo")
mine = int(os.environ["RANK"]) == SLOWED
layers = [nn.Linear(64, WIDTH), nn.ReLU()] + ([nn.Linear(WIDTH, WIDTH), nn.ReLU()] if WIDTH > 256 else [])
model = nn.Sequential(*layers, nn.Linear(WIDTH, 10))


def pause(*_):
    time.sleep(0.03)


if mine and WHERE == "forward":
    model[0].register_forward_pre_hook(pause)
if mine and WHERE == "backward":
    model[0].weight.register_hook(lambda grad: pause())
if mine and WHERE == "optimizer":
    register_optimizer_step_post_hook(pause)
model = nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _step in range(1000):
    if mine and WHERE == "input":
        pause()
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
