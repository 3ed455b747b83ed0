"""Positive controls for a desync: at step 3 the ranks' collectives part, by KIND (the first argument).

extra: rank 0 alone all-reduces its loss for logging (a classic bug); shape: both all-reduce, 2 floats against 3;
dtype: 4 elements, float32 against int32 (16 bytes each: no backend notices); op: all-reduce against broadcast;
size0, size1: 1,000 floats against 999, the larger on rank 0 or on rank 1."""

import sys

import torch
import torch.distributed as dist
from torch import nn

KIND = sys.argv[1]
LARGER = int(KIND[-1]) if KIND.startswith("size") else 0
dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.parallel.DistributedDataParallel(nn.Linear(16, 16))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def log_mean_loss(loss):
    t = loss.detach().reshape(1)
    dist.all_reduce(t)
    return t


def parted():
    if KIND == "extra" and rank == 0:
        log_mean_loss(torch.ones(()))
    elif KIND == "shape":
        dist.all_reduce(torch.ones(2 if rank == 0 else 3))
    elif KIND == "dtype":
        dist.all_reduce(torch.ones(4, dtype=torch.float32 if rank == 0 else torch.int32))
    elif KIND == "op":
        t = torch.ones(4)
        dist.all_reduce(t) if rank == 0 else dist.broadcast(t, src=0)
    elif KIND.startswith("size"):
        dist.all_reduce(torch.ones(1000 if rank == LARGER else 999))


for step in range(8):
    if step == 3:
        parted()
    model(torch.randn(4, 16)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
