"""A healthy job that pauses: at each step of AT the rank RANK_OF sleeps PAUSE_S seconds (a checkpoint saved on one
rank while the others wait in the next all-reduce), then all train on until RUN_ON_S seconds after the last pause.

    pauses.py PAUSE_S RUN_ON_S RANK@STEP [RANK@STEP ...]    e.g. pauses.py 6 26 0@5 1@15"""

import sys
import time

import torch
import torch.distributed as dist
from torch import nn

pause_s, run_on_s = float(sys.argv[1]), float(sys.argv[2])
pauses = {int(step): int(rank) for rank, step in (arg.split("@") for arg in sys.argv[3:])}
dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.parallel.DistributedDataParallel(nn.Linear(64, 64))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
last_pause, step = max(pauses), 0
ends_at = float("inf")
while True:
    if pauses.get(step) == rank:
        time.sleep(pause_s)  # a checkpoint, an evaluation: this rank's alone
    model(torch.randn(8, 64)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    if step == last_pause:  # every rank passed the last pause together (its all-reduce waited for it)
        ends_at = time.monotonic() + run_on_s
    time.sleep(0.02)
    step += 1
    over = torch.tensor([float(time.monotonic() >= ends_at)])
    dist.all_reduce(over, op=dist.ReduceOp.MAX)  # every rank stops at the same step
    if over.item():
        break
print(f"rank {rank} ran {step} steps to its end")
dist.destroy_process_group()
