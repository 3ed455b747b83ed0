"""A deep, narrow MLP: many small gradients, so DDP's bucket size decides how many all-reduces run."""

import torch
from torch import nn

WIDTH, DEPTH = 256, 64


def build():
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers)

    def make_batch(batch_size, generator):
        return torch.randn(batch_size, WIDTH, generator=generator), None

    return model, make_batch
