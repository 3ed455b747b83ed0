"""A training script that shards its own model with FSDP2: four blocks and a head, over Gloo on CPU.

python train_fsdp.py [STEPS]"""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(4)], nn.Linear(256, 10))
for block in model[:4]:
    fully_shard(block)
fully_shard(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 12):
    model(torch.randn(32, 256)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
