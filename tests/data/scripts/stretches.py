"""A DDP script whose run is cut into stretches with a known truth (the changes' control grid:
benchmarks/check/changes_grid.py). Every step computes COMPUTE_MS (a sleep, so that a busy core does not move the truth)
in a hook on the first layer's gradient, the last in backward order: DDP's first bucket is then in flight beside it,
the second launches after it; and a small real forward and backward around it. The script all-reduces each bucket
through a comm hook of its own (commprof times it). Steps count from 1, as commprof counts them. SCENARIO:

- none:    every step alike (15 ms). No change, one stretch.
- step:    every rank computes 45 ms from step 60 on. One change of the step at 60, late rank none.
- comm:    from step 60 on, the hook also all-reduces a padding 3 times the first bucket's size beside it (a link
           that got slower), hidden behind the backward's computation: the time with a collective in flight grows
           about three-fold at 60 while the step stays the same. One communication change at 60, no step change.
- stretch: rank 0 is 60 ms late before its forward in steps 40-79. Step changes at 40 and 80; rank 0 late in 40-79.
- two:     rank 0 is 40 ms late in steps 25-44, rank 1 in steps 75-94. Step changes at 25, 45, 75 and 95; rank 0
           late in 25-44, rank 1 in 75-94.
- startup: every rank computes 30 ms in steps 1-20 (a warm-up), then 15. One step change at 21, late rank none.

    stretches.py SCENARIO [STEPS]   (default 120 steps)"""

import sys
import time

import torch
import torch.distributed as dist
from torch import nn

SCENARIO = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 120
WIDTH = 512  # DDP's first bucket (1 MB cap): the last two layers, about 1 MB; the second: the first layer
SLOWER_MS = 12  # comm: the first bucket's all-reduce from step 60 on, done this much later

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
step = 0  # the step running now
slower: list[tuple[float, torch.futures.Future]] = []  # comm: when the first bucket's all-reduce is let end


def compute_ms() -> float:
    if SCENARIO == "step" and step >= 60:
        return 45
    if SCENARIO == "startup" and step <= 20:
        return 30
    return 15


def late_ms() -> float:
    if SCENARIO == "stretch" and rank == 0 and 40 <= step <= 79:
        return 60
    if SCENARIO == "two" and ((rank == 0 and 25 <= step <= 44) or (rank == 1 and 75 <= step <= 94)):
        return 40
    return 0


def all_reduce_hook(_state, bucket):
    tensor = bucket.buffer().div_(world)
    future = dist.all_reduce(tensor, async_op=True).get_future()
    if SCENARIO == "comm" and step >= 60 and bucket.index() == 0:  # a slower link: done SLOWER_MS after its launch
        slower.append((time.perf_counter() + SLOWER_MS / 1000, later := torch.futures.Future()))
        future = torch.futures.collect_all([future, later])
    return future.then(lambda _: tensor)


def compute(_grad):
    """The step's computation, with the first bucket in flight; the slower link's bucket let end inside it (by this
    thread: a timer's thread, started each step, waited for a core and held the step back)."""
    end = time.perf_counter() + compute_ms() / 1000
    while slower:
        due, later = slower.pop()
        time.sleep(max(0.0, due - time.perf_counter()))
        later.set_result(None)
    time.sleep(max(0.0, end - time.perf_counter()))


layers = nn.Sequential(nn.Linear(64, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 10))
layers[0].weight.register_hook(compute)
model = nn.parallel.DistributedDataParallel(layers)
model.register_comm_hook(None, all_reduce_hook)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, STEPS + 1):  # noqa: B007 (the hooks read it)
    time.sleep(late_ms() / 1000)
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    nn.functional.cross_entropy(model(inputs), target).backward()
    optimizer.step()
    optimizer.zero_grad()
print(f"rank {rank}: {SCENARIO}, {STEPS} steps")
dist.destroy_process_group()
