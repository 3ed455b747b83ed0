"""A DDP training script that times its own optimizer steps (wall clock, rank 0) into --out: the same numbers
under torchrun and under `commprof run --`, for benchmarks/measure/bench_script_overhead.py and bench_whole_run.py.
--device cuda: NCCL, each rank on its LOCAL_RANK's GPU, synchronised before each step's time is taken. --comm-hook
allreduce: the script registers torch's own Python all-reduce hook (DDP's all-reduce without its fused division)."""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--out", required=True)
parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
parser.add_argument("--comm-hook", choices=("none", "allreduce"), default="none")
args = parser.parse_args()

cuda = args.device == "cuda"
if cuda:
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
dist.init_process_group("nccl" if cuda else "gloo")
device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [nn.Linear(1024, 1024), nn.ReLU()]
model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers).to(device))
if args.comm_hook == "allreduce":
    model.register_comm_hook(None, default_hooks.allreduce_hook)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
batches = [torch.randn(32, 1024, device=device) for _ in range(4)]
times, last = [], time.perf_counter()
for step in range(args.steps):
    model(batches[step % 4]).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
    now = time.perf_counter()
    times.append((now - last) * 1e3)
    last = now
if dist.get_rank() == 0:
    with open(args.out, "w") as f:
        json.dump(times, f)
dist.destroy_process_group()
