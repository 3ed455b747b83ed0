"""torch.compile over DDP, as nanoGPT trains: the model compiled, then wrapped in DDP (with `ddp-first`, DDP compiled
instead); eight layers of 1 MiB of parameters each, so that DDP's 25 MB buckets and its 1 MiB first one split the
compiled graph in three.

    train_compiled.py BACKEND STEPS [ddp-first]    e.g. train_compiled.py inductor 40"""

import sys

import torch
import torch.distributed as dist
from torch import nn

backend, steps = sys.argv[1], int(sys.argv[2])
dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Sequential(*(layer for _ in range(8) for layer in (nn.Linear(512, 512), nn.ReLU())))
if "ddp-first" in sys.argv[3:]:
    model = torch.compile(nn.parallel.DistributedDataParallel(model), backend=backend)
else:
    model = nn.parallel.DistributedDataParallel(torch.compile(model, backend=backend))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(steps):
    loss = model(torch.randn(32, 512)).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
print(f"rank {dist.get_rank()} ran {steps} steps")
dist.destroy_process_group()
