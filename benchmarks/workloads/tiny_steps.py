"""A DDP script with steps of about a millisecond, for benchmarks/check/bench_long_run.py: as many as --steps."""

import argparse

import torch
import torch.distributed as dist
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=100_000)
args = parser.parse_args()

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs, target = torch.randn(8, 16), torch.randint(0, 4, (8,))
for _ in range(args.steps):
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
