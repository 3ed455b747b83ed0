"""An FSDP2 script in the shape of pytorch/examples' distributed/FSDP2/example.py (and torchtitan's): its model
built on the meta device, `fully_shard` on each block then on the model while on meta, then `to_empty(device=...)`
under `torch.__future__.set_swap_module_params_on_conversion(True)` (each DTensor parameter swapped in place by
`torch.utils.swap_tensors`), each Linear's `reset_parameters()`, and a few steps of Adam over Gloo on CPU, each rank
printing `rank R step N` after each step (what benchmarks/check/differential.py compares).

    python meta_fsdp.py [STEPS]"""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

torch.__future__.set_swap_module_params_on_conversion(True)
dist.init_process_group("gloo")
torch.manual_seed(0)
with torch.device("meta"):
    model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(4)], nn.Linear(256, 10))
for block in model[:4]:
    fully_shard(block)
fully_shard(model)
model.to_empty(device="cpu")
for module in model.modules():
    if isinstance(module, nn.Linear):
        module.reset_parameters()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(1, 1 + (int(sys.argv[1]) if len(sys.argv) > 1 else 12)):
    model(torch.randn(32, 256)).sum().backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad()
    print(f"rank {dist.get_rank()} step {step}", flush=True)
dist.destroy_process_group()
