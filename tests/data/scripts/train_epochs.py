"""A plain DDP training script as people write them: argparse, a Dataset with a DistributedSampler and a
DataLoader, epochs, an LR schedule, gradient clipping, a checkpoint on rank 0. It knows nothing of commprof."""

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    parser.add_argument("--width", type=int, default=512)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
    sampler = DistributedSampler(data, shuffle=True)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, num_workers=1)
    width = args.width
    model = DDP(
        nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)),
        bucket_cap_mb=1,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for inputs, target in loader:
            optimizer.zero_grad()
            loss_fn(model(inputs), target).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
        print(f"epoch {epoch + 1} of {args.epochs} done", file=sys.stderr)
    if rank == 0:
        torch.save(model.module.state_dict(), args.checkpoint)
        print(f"saved {args.checkpoint} after {args.epochs} epochs, RANK={os.environ['RANK']}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
