"""Trains alone: never initializes torch.distributed."""

import torch
from torch import nn

model = nn.Linear(32, 32)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(30):
    model(torch.randn(8, 32)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
