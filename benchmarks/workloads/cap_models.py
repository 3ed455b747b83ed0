"""A plain DDP training script for tune's control grid (benchmarks/check/tune_launch_grid.py), written as users
write theirs: argparse, its own init_process_group, DistributedDataParallel(model, bucket_cap_mb=...) only where
--bucket-cap-mb is given. It knows nothing of commprof, so it runs the same under torchrun and under commprof.

--model many-small: 48 layers of 64x64 (16.6 KB of gradients each, 0.8 MB in all), little compute a step: at
bucket_cap_mb=0.02 DDP builds a bucket per layer or two, and the calls cost more than the bytes (the cap matters).
--model cnn: a small ResNet (1.23 M parameters; conv layers, SGD): at 0.05 MB about 9 buckets, and the step is
the convolutions' (the cap barely matters). With --out, rank 0 writes each optimizer step's wall time (ms) there
as JSON, for the torchrun side of the grid."""

import argparse
import json
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class Block(nn.Module):
    def __init__(self, channels: int, stride: int = 1):
        super().__init__()
        out = channels * stride
        self.conv1 = nn.Conv2d(channels, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.skip = nn.Conv2d(channels, out, 1, stride, bias=False) if stride > 1 else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.skip(x))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        Block(32),
        Block(32, 2),
        Block(64),
        Block(64, 2),
        Block(128),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(128, 10),
    )


def many_small() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(48):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(64, 10))


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a small model with DistributedDataParallel.")
    parser.add_argument("--model", choices=("many-small", "cnn"), default="cnn")
    parser.add_argument("--bucket-cap-mb", type=float, default=None)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = cnn() if args.model == "cnn" else many_small()
    given = {} if args.bucket_cap_mb is None else {"bucket_cap_mb": args.bucket_cap_mb}
    ddp = DistributedDataParallel(model, **given)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(dist.get_rank())
    shape = (args.batch_size, 3, 32, 32) if args.model == "cnn" else (args.batch_size, 64)
    loss_fn = nn.CrossEntropyLoss()
    times, last = [], time.perf_counter()
    for _ in range(args.steps):
        inputs = torch.randn(*shape, generator=generator)
        target = torch.randint(0, 10, (args.batch_size,), generator=generator)
        optimizer.zero_grad()
        loss_fn(ddp(inputs), target).backward()
        optimizer.step()
        now = time.perf_counter()
        times.append((now - last) * 1e3)
        last = now
    if args.out and dist.get_rank() == 0:
        with open(args.out, "w") as f:
            json.dump(times, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
