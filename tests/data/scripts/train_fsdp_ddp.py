"""A training script with two kinds of data parallelism, over Gloo on CPU: an encoder of four blocks sharded with
FSDP2 (each block, then the encoder) and a head wrapped inline with DDP (bucket_cap_mb=1: two buckets), trained by
one optimizer.

    python train_fsdp_ddp.py [STEPS]"""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
encoder = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(4)])
for block in encoder:
    fully_shard(block)
fully_shard(encoder)
head = DDP(
    nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)), bucket_cap_mb=1
)
optimizer = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.01)
for _step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 12):
    x, labels = torch.randn(32, 256), torch.randint(10, (32,))
    features = encoder(x)
    loss = nn.functional.cross_entropy(head(features), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
