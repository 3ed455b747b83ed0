"""What the PyTorch profiler costs per operator: one built-in model trained in one process (no DDP, one
thread), blocks of steps alternating without the profiler and inside its active window.

    python benchmarks/measure/profiler_per_op_cost.py [--model mlstm] [--rounds 6] [--block 6] [--no-record-shapes]

Prints the median step time of each, the operators the profiler records per step, the extra cost per
operator, and how much the process's resident memory grows per profiled step (Linux). Run it under
MALLOC_MMAP_THRESHOLD_=131072 to see how much of that growth is glibc's heap and how much the records."""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from commprof.workloads.models import build_builtin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlstm")
    parser.add_argument("--size", default="small")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--block", type=int, default=6)
    parser.add_argument("--no-record-shapes", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    workload = build_builtin(args.model, args.size)
    optimizer = torch.optim.SGD(workload.model.parameters(), lr=0.01)
    inputs, target = workload.make_batch(32, torch.Generator().manual_seed(0))

    def step() -> float:
        start = time.perf_counter()
        optimizer.zero_grad()
        workload.loss(workload.model(inputs), target).backward()
        optimizer.step()
        return (time.perf_counter() - start) * 1e3

    for _ in range(3):
        step()
    plain, profiled, ops, growth = [], [], [], []
    for _ in range(args.rounds):
        plain += [step() for _ in range(args.block)]
        before = _resident_mib()
        with profile(activities=[ProfilerActivity.CPU], record_shapes=not args.no_record_shapes) as prof:
            profiled += [step() for _ in range(args.block)]
            growth.append((_resident_mib() - before) / args.block)
        ops.append(sum(1 for e in prof.events() if e.device_type.name == "CPU") / args.block)
    plain_ms, profiled_ms, per_step = statistics.median(plain), statistics.median(profiled), statistics.median(ops)
    print(
        f"{workload.name}: {plain_ms:.1f} ms/step unprofiled, {profiled_ms:.1f} profiled "
        f"({profiled_ms / plain_ms - 1:+.1%}); {per_step:.0f} operators recorded per step, "
        f"{(profiled_ms - plain_ms) * 1e3 / per_step:.2f} µs each; resident memory "
        f"+{statistics.median(growth):.0f} MiB per profiled step"
    )


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


if __name__ == "__main__":
    main()
