"""A 2-D training script (FSDP2 over "dp", tensor parallelism over "tp" on a dp=2 x tp=2 mesh, 4 Gloo ranks) that
times its own optimizer steps (wall clock, rank 0) into --out: the whole-run clock's cost on a job whose every
collective goes through torch.distributed's and DTensor's functions (benchmarks/measure/bench_whole_run.py)."""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--out", required=True)
parser.add_argument("--device", choices=("cpu",), default="cpu")
args = parser.parse_args()


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


world = int(os.environ["WORLD_SIZE"])
mesh = init_device_mesh("cpu", (world // 2, 2), mesh_dim_names=("dp", "tp"))
torch.manual_seed(0)
model = nn.Sequential(*[Block(256) for _ in range(4)])
for block in model:
    parallelize_module(block, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
    fully_shard(block, mesh=mesh["dp"])
fully_shard(model, mesh=mesh["dp"])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
torch.manual_seed(mesh["dp"].get_local_rank())
batches = [torch.randn(32, 256) for _ in range(4)]
times, last = [], time.perf_counter()
for step in range(args.steps):
    model(batches[step % 4]).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    now = time.perf_counter()
    times.append((now - last) * 1e3)
    last = now
if dist.get_rank() == 0:
    with open(args.out, "w") as f:
        json.dump(times, f)
dist.destroy_process_group()
