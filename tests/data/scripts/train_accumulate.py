"""Train a small MLP with gradient accumulation, the way public DDP scripts do: argparse, its own process group and
DistributedDataParallel, and no_sync() for every micro-batch but the last of each optimizer step (so only that
backward all-reduces). Run it with torchrun (or `commprof run -- train_accumulate.py --accum 4`). It knows nothing of
commprof."""

import argparse
import contextlib
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    parser.add_argument("--steps", type=int, default=10_000, help="optimizer steps")
    parser.add_argument("--micro-batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    dist.init_process_group(backend="gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        optimizer.zero_grad(set_to_none=True)
        for micro in range(args.accum):
            inputs = torch.randn(args.micro_batch, 64, generator=generator)
            target = torch.randint(0, 10, (args.micro_batch,), generator=generator)
            last = micro == args.accum - 1
            with contextlib.nullcontext() if last else model.no_sync():
                loss = loss_fn(model(inputs), target) / args.accum
                loss.backward()
        optimizer.step()
        if rank == 0 and step % 100 == 0 and os.environ.get("VERBOSE"):
            print(f"step {step} loss {loss.item() * args.accum:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
