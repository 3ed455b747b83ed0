"""A DeepSpeed ZeRO training script as its users write one: its own deepspeed.init_distributed, a config (a dict, or
a JSON file with --deepspeed_config), engine.backward and engine.step, and the --local_rank argument the deepspeed
launcher passes. Runs on CPU ranks over Gloo with DS_ACCELERATOR=cpu."""

import argparse

import deepspeed
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--stage", type=int, default=2)
parser.add_argument("--iters", type=int, default=40)
parser.add_argument("--reduce-bucket-size", type=float, default=5e5)
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--deepspeed_config", default=None, help="a JSON file, read by DeepSpeed, instead of the dict")
args = parser.parse_args()
if args.local_rank < 0:  # as a script that picks its device by it would fail
    raise SystemExit("no --local_rank: the deepspeed launcher passes it")

# On CPU, DeepSpeed's backend builds its shared-memory op (deepspeed_shm_comm) as it starts: a minute or two of
# compiling on a machine that never built it, for its inference all-reduce only (training's collectives go over
# torch.distributed). DeepSpeed keeps the ops it found buildable in one dict, so that edits to it persist
# (deepspeed/ops/__init__.py): this script, which never runs inference, says the op is not there.
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
deepspeed.init_distributed(dist_backend="gloo")
torch.manual_seed(0)
model = nn.Sequential(*(layer for _ in range(4) for layer in (nn.Linear(256, 256), nn.ReLU())), nn.Linear(256, 10))
config = args.deepspeed_config or {
    "train_micro_batch_size_per_gpu": 16,
    "gradient_accumulation_steps": 1,
    "zero_optimization": {
        "stage": args.stage,
        "reduce_bucket_size": args.reduce_bucket_size,
        "allgather_bucket_size": args.reduce_bucket_size,
        "overlap_comm": True,
        **({"stage3_param_persistence_threshold": 0} if args.stage == 3 else {}),  # every layer partitioned
    },
    "steps_per_print": 1000000,
}
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
data = torch.randn(16, 256)
target = torch.randint(0, 10, (16,))
for _ in range(args.iters):
    loss = nn.functional.cross_entropy(engine(data), target)
    engine.backward(loss)
    engine.step()
