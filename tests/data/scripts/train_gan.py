"""A training script with two DDP models, as a GAN trains them: a generator (427,264 parameters, bucket_cap_mb=4)
and a discriminator (132,097 parameters, bucket_cap_mb=1), each with its own optimizer, over Gloo on CPU.

    python train_gan.py [--steps N] [--generator-cap MB] [--discriminator-cap MB]"""

import argparse

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--generator-cap", type=float, default=4)
parser.add_argument("--discriminator-cap", type=float, default=1)
args = parser.parse_args()

dist.init_process_group("gloo")
torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 256))
discriminator = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 1))
gen = DDP(generator, bucket_cap_mb=args.generator_cap)
disc = DDP(discriminator, bucket_cap_mb=args.discriminator_cap)
gen_opt = torch.optim.Adam(gen.parameters(), lr=1e-4)
disc_opt = torch.optim.Adam(disc.parameters(), lr=1e-4)
loss = nn.BCEWithLogitsLoss()
for _step in range(args.steps):
    real = torch.randn(64, 256)
    fake = gen(torch.randn(64, 64))
    # the discriminator's step: real against fake (the generator's output detached)
    disc_loss = loss(disc(real), torch.ones(64, 1)) + loss(disc(fake.detach()), torch.zeros(64, 1))
    disc_opt.zero_grad()
    disc_loss.backward()
    disc_opt.step()
    # the generator's step: fool the discriminator
    gen_loss = loss(disc(fake), torch.ones(64, 1))
    gen_opt.zero_grad()
    gen_loss.backward()
    gen_opt.step()
dist.destroy_process_group()
