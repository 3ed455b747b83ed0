"""A model with a parameter that never takes part in the loss: DDP fails on it unless told
find_unused_parameters=True (the user's model from issue 13)."""

import torch
from torch import nn


class WithUnusedHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
        self.unused_head = nn.Linear(64, 10)  # e.g. an auxiliary head switched off in this training phase

    def forward(self, x):
        return self.body(x)


def build():
    def make_batch(batch_size, generator):
        return torch.randn(batch_size, 64, generator=generator), None

    return WithUnusedHead(), make_batch
