"""Gradient accumulation with no_sync, autocast and a GradScaler, DDP imported at the top under another name:
one optimizer step per --accumulate micro-batches. It knows nothing of commprof."""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as Wrapped

ACCUMULATE = int(sys.argv[sys.argv.index("--accumulate") + 1]) if "--accumulate" in sys.argv else 4

dist.init_process_group("gloo")
torch.manual_seed(1)
model = Wrapped(nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 32)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
scaler = torch.amp.GradScaler("cpu")
for _step in range(10_000):
    for micro in range(ACCUMULATE):
        inputs = torch.randn(8, 32)
        context = model.no_sync() if micro < ACCUMULATE - 1 else torch.enable_grad()
        with context, torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(inputs).float().pow(2).mean() / ACCUMULATE
        scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
