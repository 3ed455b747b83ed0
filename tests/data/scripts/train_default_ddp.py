"""A DDP script written the way public examples are (PyTorch's DDP tutorial, most repositories' train.py):
argparse, its own init_process_group from torchrun's environment, and DistributedDataParallel(model) with no
bucket_cap_mb, so DDP's defaults decide the buckets: a first bucket of 1 MiB, then 25 MiB. Its twelve 256x256
layers hold 3.2 MB of gradients: DDP builds two buckets here (1.0 MiB, then the rest), where any explicit
bucket_cap_mb of 5 or more builds one. It knows nothing of commprof."""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def build_model(width: int, depth: int) -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a small MLP with DistributedDataParallel.")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps-per-epoch", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=12)
    args = parser.parse_args()

    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    torch.manual_seed(0)
    model = build_model(args.width, args.depth).to(device)
    ddp_model = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(rank)
    for epoch in range(args.epochs):
        for _ in range(args.steps_per_epoch):
            inputs = torch.randn(args.batch_size, args.width, generator=generator).to(device)
            target = torch.randint(0, 10, (args.batch_size,), generator=generator).to(device)
            optimizer.zero_grad()
            loss = loss_fn(ddp_model(inputs), target)
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
