"""A 1.07-billion-parameter MLP (16 layers of 8192 x 8192) for the GPU sweep check (benchmarks/gpu_validation.sh):
each setting's model, DDP buckets, gradients and SGD momentum take about 17 GB, so five settings do not fit in 80 GB
at once."""

import torch
from torch import nn

WIDTH, DEPTH = 8192, 16


def build():
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers)

    def make_batch(batch_size, generator):
        return torch.randn(batch_size, WIDTH, generator=generator), None

    return model, make_batch
