"""The whole-run recorder's own work, timed alone (issue 31): what it adds per all-reduce and per step, and its
periodic write, on one CPU core without any training.

    python benchmarks/measure/whole_run_micro.py [--repeats 7]

- per all-reduce: TimedHook(inner) against inner alone, both called with a fake bucket, inner returning a
  completed future (its `then` callback, the one that times the end, runs at once);
- per step: StepLedger.step_ended with 2 and with 64 (MAX_CALLS) timed all-reduces, the 10-second write left out;
- per write (every 10 s, and at the end): StepLedger.write once its record is full (2 x RECENT recent steps);
- per step on CPU without a hook: reading DDP's own timers (`_get_ddp_logging_data`) of a one-rank DDP (an
  in-process Gloo group) after a training step.
Each figure is the fastest of --repeats runs (the machine's noise only adds), in microseconds."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from commprof.launch.progress import Every  # noqa: E402
from commprof.results.step_ledger import RECENT  # noqa: E402
from commprof.worker.step_ledger import StepLedger  # noqa: E402


class FakeBucket:
    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor

    def buffer(self) -> torch.Tensor:
        return self.tensor


def inner(state, bucket):
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def fastest_us(fn, calls: int, repeats: int) -> float:
    """The fastest of `repeats` runs of `calls` calls of fn, per call (us)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / calls / 1e3)
    return best


def ledger(folder: Path) -> StepLedger:
    recorder = StepLedger(folder, 0, "host", use_cuda=False, window=(8, 17))
    recorder.due = Every(float("inf"))  # the write is timed on its own
    recorder.due()  # its first call is due; never again
    return recorder


def step_us(folder: Path, buckets: int, repeats: int) -> float:
    """step_ended with `buckets` timed all-reduces, the all-reduces' own timing left out."""
    recorder = ledger(folder)
    hook = recorder.timed(inner)
    bucket = FakeBucket(torch.zeros(1024))
    best = float("inf")
    for _ in range(repeats):
        total = 0
        for _ in range(500):
            for _ in range(buckets):
                hook(None, bucket).wait()
            start = time.perf_counter_ns()
            recorder.step_ended(100.0)
            total += time.perf_counter_ns() - start
        best = min(best, total / 500 / 1e3)
    return best


def write_us(folder: Path, buckets: int, repeats: int) -> tuple[float, int]:
    """StepLedger.write with a full record (2 x RECENT recent steps of `buckets` all-reduces), and its size."""
    recorder = ledger(folder)
    hook = recorder.timed(inner)
    bucket = FakeBucket(torch.zeros(1024))
    for step in range(2 * RECENT):
        for _ in range(buckets):
            hook(None, bucket).wait()
        recorder.step_ended(100.0 + step % 37)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        recorder.write()
        best = min(best, (time.perf_counter_ns() - start) / 1e3)
    return best, recorder.path.stat().st_size


def ddp_timers_us(repeats: int) -> float:
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1024, 1024))
        ddp._set_ddp_runtime_logging_sample_rate(1)
        for _ in range(3):
            ddp(torch.randn(8, 1024)).sum().backward()
        return fastest_us(ddp._get_ddp_logging_data, 1000, repeats)
    finally:
        dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bucket = FakeBucket(torch.zeros(1024))
        recorder = ledger(folder)
        timed = recorder.timed(inner)
        plain_us = fastest_us(lambda: inner(None, bucket).wait(), 20_000, args.repeats)
        timed_us = fastest_us(lambda: timed(None, bucket).wait(), 20_000, args.repeats)
        recorder.launches.clear()
        print(f"per all-reduce: TimedHook adds {timed_us - plain_us:.1f} us ({timed_us:.1f} against {plain_us:.1f})")
        for buckets in (2, 64):
            print(f"per step, {buckets} all-reduces: step_ended {step_us(folder, buckets, args.repeats):.1f} us")
        print(f"per step, DDP's own timers read: {ddp_timers_us(args.repeats):.1f} us")
        for buckets in (2, 64):
            us, size = write_us(folder, buckets, args.repeats)
            print(
                f"per write, {2 * RECENT} recent steps of {buckets} all-reduces: {us / 1e3:.1f} ms "
                f"({size / 2**20:.2f} MiB), {us / 10e6:.2%} of the 10 s between writes"
            )


if __name__ == "__main__":
    main()
