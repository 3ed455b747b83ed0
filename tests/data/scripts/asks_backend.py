"""A plain DDP script whose init_process_group names the backend BACKEND, as scripts hard-code one: commprof's
--backend (compare's backends) replaces it, as it does DDP's arguments.

    asks_backend.py BACKEND STEPS    e.g. asks_backend.py mpi 12"""

import sys

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group(sys.argv[1])
print(f"rank {dist.get_rank()} runs on {dist.get_backend()}")
model = nn.parallel.DistributedDataParallel(nn.Linear(256, 256))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(int(sys.argv[2])):
    model(torch.randn(16, 256)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
