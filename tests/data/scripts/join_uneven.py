"""Uneven inputs under Join, as PyTorch's ZeroRedundancyOptimizer and Join recipes write them: DDP over a linear
model, ZeroRedundancyOptimizer, rank 0 with 30 batches and rank 1 with 40. Once rank 0's inputs run out, Join
shadows the others' collectives for it: its optimizer's join hook steps with them 10 more times (issue 72)."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.join import Join
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)))
optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
batches = [torch.randn(16, 64) for _ in range(30 if rank == 0 else 40)]
steps = 0
with Join([model, optimizer]):
    for batch in batches:
        optimizer.zero_grad()
        model(batch).square().mean().backward()
        optimizer.step()
        steps += 1
print(f"rank {rank}: join: {steps} steps", flush=True)
dist.destroy_process_group()
