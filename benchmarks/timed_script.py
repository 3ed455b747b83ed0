"""A DDP training script that times its own optimizer steps (wall clock, rank 0) into --out: the same numbers
under torchrun and under `commprof run --`, for benchmarks/bench_script_overhead.py."""

import argparse
import json
import time

import torch
import torch.distributed as dist
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--out", required=True)
args = parser.parse_args()

dist.init_process_group("gloo")
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [nn.Linear(1024, 1024), nn.ReLU()]
model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
batches = [torch.randn(32, 1024) for _ in range(4)]
times, last = [], time.perf_counter()
for step in range(args.steps):
    model(batches[step % 4]).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    now = time.perf_counter()
    times.append((now - last) * 1e3)
    last = now
if dist.get_rank() == 0:
    with open(args.out, "w") as f:
        json.dump(times, f)
dist.destroy_process_group()
