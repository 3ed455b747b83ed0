"""A plain Horovod PyTorch script, as Horovod's own examples write one (examples/pytorch/pytorch_synthetic_benchmark.py,
pytorch_mnist.py): hvd.init(), the optimizer wrapped in hvd.DistributedOptimizer, the parameters and the optimizer's
state broadcast from rank 0; launched with `horovodrun -np 2 -H localhost:2 --gloo python train_horovod.py`. Its
twelve 256x256 layers hold 3.2 MB of gradients, which Horovod fuses into its fusion buffer (128 MiB unless
HOROVOD_FUSION_THRESHOLD says otherwise). It knows nothing of commprof."""

import argparse

import horovod.torch as hvd
import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a small MLP with Horovod.")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=12)
    args = parser.parse_args()

    hvd.init()
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(args.depth):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(args.width, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(hvd.rank())
    for step in range(args.steps):
        inputs = torch.randn(args.batch_size, args.width, generator=generator)
        target = torch.randint(0, 10, (args.batch_size,), generator=generator)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), target)
        loss.backward()
        optimizer.step()
        if hvd.rank() == 0 and step % 20 == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
