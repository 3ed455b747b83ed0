"""A plain DDP script whose loop decides how many steps it runs (--iters), as public training scripts do."""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=20)
parser.add_argument("--lr", type=float, default=0.01)
args = parser.parse_args()

dist.init_process_group("gloo")
model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
for _ in range(args.iters):
    loss = nn.functional.cross_entropy(model(torch.randn(32, 256)), torch.randint(0, 10, (32,)))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
