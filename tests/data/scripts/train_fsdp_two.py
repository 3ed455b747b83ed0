"""A training script that shards two models of its own with FSDP2, a teacher and a student (each block, then the
model), and trains the student against the teacher's output, over Gloo on CPU.

    python train_fsdp_two.py [STEPS]"""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
torch.manual_seed(0)
teacher = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(3)], nn.Linear(256, 10))
student = nn.Sequential(nn.Sequential(nn.Linear(256, 64), nn.ReLU()), nn.Linear(64, 10))
for block in teacher[:3]:
    fully_shard(block)
fully_shard(teacher)
fully_shard(student[0])
fully_shard(student)
optimizer = torch.optim.SGD([*teacher.parameters(), *student.parameters()], lr=0.01)
for _step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 12):
    x = torch.randn(32, 256)
    loss = teacher(x).sum() + (student(x) - teacher(x).detach()).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
dist.destroy_process_group()
