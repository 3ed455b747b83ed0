"""A 2-stage pipeline (torch.distributed.pipelining, GPipe over 4 micro-batches) times 2-way data parallelism on a
("pp", "dp") mesh of 4 CPU ranks over Gloo: stage 0 on ranks 0 and 1, stage 1 on ranks 2 and 3; each stage's
activations and gradients sent over "pp", its gradients all-reduced over "dp" by the script's own calls.
`train_pipeline_dp.py [STEPS]` (issue 70's grid)."""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
MICRO, BATCH, DIM = 4, 32, 256

mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
pp, dp = mesh["pp"], mesh["dp"]
stage_index = pp.get_local_rank()
torch.manual_seed(stage_index)
if stage_index == 0:
    stage_module = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.ReLU(), nn.Linear(4 * DIM, DIM))
else:
    stage_module = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.ReLU(), nn.Linear(4 * DIM, 10))
micro = torch.randn(BATCH // MICRO, DIM)
stage = PipelineStage(
    stage_module,
    stage_index,
    2,
    torch.device("cpu"),
    input_args=(micro,),
    group=pp.get_group(),
)
schedule = ScheduleGPipe(stage, MICRO, loss_fn=nn.functional.cross_entropy)
optimizer = torch.optim.SGD(stage_module.parameters(), lr=0.01)
for step in range(STEPS):
    torch.manual_seed(step * 2 + dp.get_local_rank())  # each replica its own batch, the same on both stages
    inputs, target = torch.randn(BATCH, DIM), torch.randint(0, 10, (BATCH,))
    if stage_index == 0:
        schedule.step(inputs)
    else:
        schedule.step(target=target)
    for p in stage_module.parameters():  # the replicas' gradients averaged over "dp"
        dist.all_reduce(p.grad, group=dp.get_group())
        p.grad /= dp.size()
    optimizer.step()
    optimizer.zero_grad()
    print(f"rank {dist.get_rank()} step {step + 1}", flush=True)
dist.destroy_process_group()
