"""HSDP: FSDP2 over a 2-D mesh, sharded within "dp_shard" and replicated across "dp_replicate" (2 x 2 on 4 CPU ranks
over Gloo): each block's gradient reduce-scattered within its shard group, then all-reduced across replicas."""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12


def main() -> None:
    world = int(os.environ["WORLD_SIZE"])
    mesh = init_device_mesh("cpu", (world // 2, 2), mesh_dim_names=("dp_replicate", "dp_shard"))
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(3)])
    for block in model:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(STEPS):
        torch.manual_seed(step + dist.get_rank())
        loss = model(torch.randn(32, 256)).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {dist.get_rank()} step {step + 1}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
