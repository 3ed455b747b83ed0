"""One rank of the profiling-overhead benchmark (started by benchmarks/measure/bench_overhead.py through commprof's
launcher).

Two copies of the same model train in alternating blocks of K steps:
  plain:        DDP as a user runs it: no profiler, no per-step timing or logs, DDP's default logging;
  instrumented: exactly what `commprof run` does outside the profiler's active window
                (Trainer.step with its synchronised timing, DDP logging every step, the step log and
                progress file, prof.step() in the schedule's wait phase);
  active:       the same inside the active window (recording with shapes), trace export excluded.
Each round compares a plain block with an instrumented one, then a plain block with an active one,
back to back, in alternating order; the garbage collector runs before every block, so the garbage
of one block's trace export is not collected inside the next."""

from __future__ import annotations

import copy
import gc
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from commprof.config import ProfileSchedule, RunConfig
from commprof.instrument.profiler import cuda_synchronize, make_profiler
from commprof.launch.atomic import write_json_atomic
from commprof.worker.rank import claim_run_dir, distributed, exit_on_error
from commprof.worker.run import StepRecorder
from commprof.worker.training import Trainer, make_batches
from commprof.workloads import load_workload

WARMUP_STEPS = 12


@exit_on_error
def overhead_main(payload: dict[str, Any], progress_path: str) -> dict[str, Any]:
    config = RunConfig.from_dict(payload["config"])
    rounds, block = payload["rounds"], payload["block"]
    with distributed(config) as ctx:
        run_dir = claim_run_dir(config, ctx.rank)
        torch.manual_seed(config.seed)
        workload = load_workload(config.model, config.model_size)
        batches = make_batches(workload, config.batch_size, config.seed, ctx.rank, ctx.device)
        plain = Trainer(
            copy.deepcopy(workload.model),
            workload,
            batches,
            config.ddp,
            ctx.device,
            config.precision,
            ddp_logging_every_step=False,
        )
        instrumented = Trainer(
            copy.deepcopy(workload.model), workload, batches, config.ddp, ctx.device, config.precision
        )
        cuda = ctx.device.type == "cuda"
        first_steps = [_timed(plain.train_step, cuda) for _ in range(WARMUP_STEPS)]  # how long until steady
        for _ in range(WARMUP_STEPS):
            instrumented.step()
        recorder = StepRecorder(run_dir, ctx, Path(progress_path), rounds * block)
        waiting = make_profiler(ProfileSchedule(wait=10**9, warmup=0, active=1), cuda, run_dir, ctx.rank)
        results: dict[str, list[float]] = {
            "plain": [],
            "instrumented": [],
            "plain_for_active": [],
            "active": [],
            "active_first": [],
        }
        with waiting:
            for round_index in range(rounds):
                flip = round_index % 2 == 1
                # outside the active window: a plain block and an instrumented one, back to back
                for kind in ("instrumented", "plain") if flip else ("plain", "instrumented"):
                    gc.collect()
                    step = (
                        plain.train_step
                        if kind == "plain"
                        else (lambda: _instrumented_step(instrumented, recorder, waiting))
                    )
                    results[kind].append(_block(step, block, cuda))
                # inside it: a plain block and an active one (its trace export is not timed)
                for kind in ("active", "plain") if flip else ("plain", "active"):
                    gc.collect()
                    if kind == "plain":
                        results["plain_for_active"].append(_block(plain.train_step, block, cuda))
                    else:
                        first, rest = _active_block(
                            instrumented, recorder, block, cuda, ctx.rank, payload.get("record_shapes", True)
                        )
                        results["active_first"].append(first)
                        results["active"].append(rest)
        if ctx.rank == 0:
            write_json_atomic(run_dir / "overhead.json", {"first_steps_ms": first_steps, **results})
        return {"rank": ctx.rank, "run_id": config.run_id, "run_dir": str(run_dir)}


def _timed(step, cuda: bool) -> float:
    cuda_synchronize(cuda)
    start = time.perf_counter()
    step()
    cuda_synchronize(cuda)
    return (time.perf_counter() - start) * 1e3


def _block(step, steps: int, cuda: bool) -> float:
    """Mean step time over a block, synchronised only at its ends (as an unprofiled job runs)."""
    cuda_synchronize(cuda)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    cuda_synchronize(cuda)
    return (time.perf_counter() - start) * 1e3 / steps


def _instrumented_step(trainer: Trainer, recorder: StepRecorder, prof) -> None:
    recorder.record(trainer.step())
    prof.step()


def _active_block(
    trainer: Trainer, recorder: StepRecorder, steps: int, cuda: bool, rank: int, record_shapes: bool
) -> tuple[float, float]:
    """(first recorded step, mean of the next steps - 1) in an active window; the export is not timed."""
    with tempfile.TemporaryDirectory() as tmp:
        prof = make_profiler(ProfileSchedule(wait=0, warmup=1, active=steps), cuda, Path(tmp), rank, record_shapes)
        with prof:
            _instrumented_step(trainer, recorder, prof)  # the warm-up step: profiler starting, discarded
            first = _timed(lambda: _instrumented_step(trainer, recorder, prof), cuda)
            rest = _block(lambda: _instrumented_step(trainer, recorder, prof), steps - 2, cuda)
            _instrumented_step(trainer, recorder, prof)  # the last active step: exports the trace
    return first, rest
