"""FSDP2 over "dp" and tensor parallelism over "tp" on a 2-D device mesh (dp=2 x tp=2 on 4 CPU ranks over Gloo): the
shape of pytorch/examples' distributed/tensor_parallelism/fsdp_tp_example.py, with a small MLP instead of Llama2."""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
TP = 2


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


def main() -> None:
    world = int(os.environ["WORLD_SIZE"])
    mesh = init_device_mesh("cpu", (world // TP, TP), mesh_dim_names=("dp", "tp"))
    dp, tp = mesh["dp"], mesh["tp"]
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(128) for _ in range(3)])
    for block in model:
        parallelize_module(block, tp, {"up": ColwiseParallel(), "down": RowwiseParallel()})
        fully_shard(block, mesh=dp)
    fully_shard(model, mesh=dp)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    for step in range(STEPS):
        torch.manual_seed(step + dp.get_local_rank())  # the same input across a tp group
        x = torch.randn(16, 128)
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {dist.get_rank()} step {step + 1}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
