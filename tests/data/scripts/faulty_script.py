"""A plain DDP script that misbehaves as tests/data/faulty_model.py says (COMMPROF_TEST_FAULT and the rest):
`faulty_script.py STEPS`, one optimizer step a turn."""

import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from faulty_model import misbehave  # noqa: E402

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, int(sys.argv[1]) + 1):
    misbehave(step)
    model(torch.randn(32, 64)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
