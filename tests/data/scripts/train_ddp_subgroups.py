"""Two DDP replicas side by side, each over a process group of its own ({0, 1} and {2, 3} on 4 ranks, Gloo): no
collective crosses them. `train_ddp_subgroups.py [STEPS] [LATE_RANK]`: with LATE_RANK, that rank's backward takes
30 ms longer every step (a gradient hook sleeps), so its own group's other rank waits for it and the other group
does not: the late rank of one group only (issue 70's grid)."""

import sys
import time

import torch
import torch.distributed as dist
from torch import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
LATE = int(sys.argv[2]) if len(sys.argv) > 2 else None

dist.init_process_group("gloo")
rank = dist.get_rank()
pairs = [dist.new_group([0, 1], group_desc="replica_a"), dist.new_group([2, 3], group_desc="replica_b")]
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 10))
if rank == LATE:
    model[0].weight.register_hook(lambda grad: time.sleep(0.03))
model = nn.parallel.DistributedDataParallel(model, process_group=pairs[rank // 2])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(STEPS):
    torch.manual_seed(step * 4 + rank)
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"rank {rank} step {step + 1}", flush=True)
dist.destroy_process_group()
