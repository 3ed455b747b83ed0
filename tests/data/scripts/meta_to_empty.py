"""A DDP script that builds its model on the meta device and materializes it with `to_empty` under
`torch.__future__.set_swap_module_params_on_conversion(True)`, as FSDP2 scripts and torchtitan do: `to_empty` then
swaps each parameter's tensor in place (`torch.utils.swap_tensors`), which refuses a tensor that anything holds a
weakref to. Then its weights initialized, DDP, and a few steps of SGD over Gloo on CPU, each rank printing
`rank R step N` after each step (what benchmarks/check/differential.py compares).

    python meta_to_empty.py [STEPS]"""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

torch.__future__.set_swap_module_params_on_conversion(True)
dist.init_process_group("gloo")
torch.manual_seed(0)
with torch.device("meta"):
    model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(4)], nn.Linear(256, 10))
model.to_empty(device="cpu")
for module in model.modules():
    if isinstance(module, nn.Linear):
        module.reset_parameters()
ddp_model = DistributedDataParallel(model)
optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.01)
for step in range(1, 1 + (int(sys.argv[1]) if len(sys.argv) > 1 else 12)):
    ddp_model(torch.randn(32, 256)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"rank {dist.get_rank()} step {step}", flush=True)
dist.destroy_process_group()
