"""Rank 1 stalls for 200 ms at every 10th optimizer step (a checkpoint, a slow shard now and then); between those
steps every rank is as fast as the others. It knows nothing of commprof."""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
args = parser.parse_args()

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, args.steps + 1):
    if os.environ["RANK"] == "1" and step % 10 == 0:
        time.sleep(0.2)
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
