"""One Gloo rank's Flight Recorder dump, as torch 2.13 writes it: an all_reduce of 4 floats and a barrier.
TORCH_FR_BUFFER_SIZE=100 MASTER_ADDR=127.0.0.1 MASTER_PORT=29556 python make_dump.py gloo_rank0_torch2.13.pickle"""

import sys
from pathlib import Path

import torch
import torch.distributed as dist

dist.init_process_group("gloo", rank=0, world_size=1)
t = torch.ones(4)
dist.all_reduce(t)
dist.barrier()
Path(sys.argv[1]).write_bytes(torch._C._distributed_c10d._dump_fr_trace())
dist.destroy_process_group()
