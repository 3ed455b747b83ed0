"""The whole-run clock's own cost per collective (instrument/collective_clock.py), alone: one in-process Gloo rank
(an in-memory store), a 1 KiB collective called N times with the clock installed and without, alternating blocks,
the fastest block of each kept; the difference is what the clock adds to each call (its wrapper, its stamps, its
future's callback), on this machine's core.

    python benchmarks/measure/collective_clock_micro.py [--calls 2000] [--blocks 7]"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from commprof.worker.step_ledger import StepLedger  # noqa: E402


def per_call_us(call, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--blocks", type=int, default=7)
    args = parser.parse_args()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    group = dist.new_group([0], group_desc="mesh_tp")
    x = torch.ones(256)
    shapes = {
        "all_reduce (blocking)": lambda: dist.all_reduce(x, group=group),
        "all_reduce (async_op, waited)": lambda: dist.all_reduce(x, group=group, async_op=True).wait(),
        "functional all_reduce, waited": lambda: funcol.all_reduce(x, "sum", group).wait(),
    }
    ledger = StepLedger(Path("/tmp"), 0, "micro", use_cuda=False, window=None)
    print("| call | without the clock, us | with it, us | added, us |")
    print("|---|---|---|---|")
    for name, call in shapes.items():
        off, on = [], []
        for _ in range(args.blocks):
            off.append(per_call_us(call, args.calls))
            ledger.clock.install()
            on.append(per_call_us(call, args.calls))
            ledger.clock.uninstall()
            ledger.launches.clear()
        print(f"| {name} | {min(off):.1f} | {min(on):.1f} | {min(on) - min(off):+.1f} |")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
