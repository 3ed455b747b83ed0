"""A small DDP trainer that ends in one of many ways: the differential check's corpus (benchmarks/check/differential.py
runs it under plain torchrun and under `commprof run --`, and compares how each rank ended).

    endings.py ENDING [--steps N] [--save S] [--at STEP] [--timeout S]

ENDING:
  success       every rank trains --steps steps, then destroys its process group
  no-destroy    the same, and returns without destroying it
  final-save    after the last step rank 0 alone saves a checkpoint for --save seconds, then every rank destroys
  final-save-no-destroy   the same, without destroying the group
  uneven        rank 1 has --at batches, rank 0 has --steps: rank 1 ends its loop first
  raise         rank 1 raises at step --at
  hang          rank 1 sleeps forever at step --at (the process group's timeout is --timeout seconds)
  kill          rank 1 kills itself (SIGKILL) at step --at
  exit3         rank 1 calls sys.exit(3) at step --at
  exit0         every rank calls sys.exit(0) after its last step, without destroying its group
Each rank prints one line per step done (`rank R step N`) and one at its end."""

import argparse
import os
import signal
import sys
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("ending")
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--save", type=float, default=3.0)
parser.add_argument("--at", type=int, default=6)
parser.add_argument("--timeout", type=float, default=None)
args = parser.parse_args()

timeout = {"timeout": timedelta(seconds=args.timeout)} if args.timeout else {}
dist.init_process_group("gloo", **timeout)
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 16)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batches = args.at if args.ending == "uneven" and rank == 1 else args.steps

for step in range(batches):
    if rank == 1 and step == args.at:
        if args.ending == "raise":
            raise ValueError(f"bad batch at step {step}")
        if args.ending == "hang":
            while True:
                time.sleep(1)
        if args.ending == "kill":
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if args.ending == "exit3":
            sys.stdout.flush()
            sys.exit(3)
    model(torch.randn(32, 256)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"rank {rank} step {step + 1}", flush=True)

if args.ending.startswith("final-save") and rank == 0:
    with tempfile.TemporaryDirectory() as folder:
        torch.save(model.state_dict(), os.path.join(folder, "final.pt"))
        time.sleep(args.save)  # a large model to a slow disk
if args.ending == "exit0":
    print(f"rank {rank} exits", flush=True)
    sys.exit(0)
if args.ending not in ("no-destroy", "final-save-no-destroy"):
    dist.destroy_process_group()
print(f"rank {rank} done", flush=True)
