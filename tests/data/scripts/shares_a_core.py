"""Two identical ranks, each held to a core of its own (rank r on core r), where something else shares rank 1's core
for the whole launch: a busy loop it starts on that core (another user's job, say). Rank 1 computes as much as rank
0 but gets half a core, so rank 0 waits for it every step: slower only because of what shares its core in this
launch. With `sleep` as its argument, rank 1 instead sleeps 30 ms before each batch and nothing shares its core (a
slow data source: the job's own straggler). It knows nothing of commprof."""

import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

rank = int(os.environ["RANK"])
os.sched_setaffinity(0, {rank % os.cpu_count()})
sleeps = sys.argv[1:] == ["sleep"]
hog = None
if rank == 1 and not sleeps:
    hog = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{1 % os.cpu_count()}}})\nwhile True: pass"]
    )
try:
    dist.init_process_group("gloo")
    model = nn.parallel.DistributedDataParallel(nn.Sequential(*[nn.Linear(256, 256) for _ in range(6)]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _step in range(1000):
        if sleeps and rank == 1:
            time.sleep(0.03)
        inputs = torch.randn(256, 256)
        model(inputs).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    dist.destroy_process_group()
finally:
    if hog is not None:
        hog.kill()
