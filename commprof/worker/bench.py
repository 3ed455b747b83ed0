"""Per-rank entry point of `commprof bench`: time each collective at each size, check its result."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import torch

from commprof.config import RunConfig
from commprof.instrument.collectives import DTYPES, Comm
from commprof.worker.rank import distributed, exit_on_error


def bench_sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= factor
    return sizes


def measure(comm: Comm, plan: dict[str, Any], device: torch.device) -> list[dict[str, Any]]:
    """Rows of per-iteration times (the slowest rank's, microseconds) and a correctness flag."""
    dtype = DTYPES[plan["dtype"]]
    use_cuda = device.type == "cuda"
    rows = []
    for op in plan["ops"]:
        for nbytes in bench_sizes(plan["min_bytes"], plan["max_bytes"], plan["factor"]):
            fresh = comm.buffers(op, nbytes, dtype, device)
            comm.run(op, fresh)
            if use_cuda:
                torch.cuda.synchronize()
            correct = comm.check(op, fresh)
            buffers = comm.buffers(op, nbytes, dtype, device)
            initial = buffers.send.clone()
            times = []
            for i in range(plan["warmup"] + plan["iters"]):
                buffers.send.copy_(initial)  # in-place ops would otherwise accumulate (and overflow)
                comm.barrier()
                start = time.perf_counter()
                comm.run(op, buffers)
                if use_cuda:
                    torch.cuda.synchronize()
                if i >= plan["warmup"]:
                    times.append((time.perf_counter() - start) * 1e6)
            per_rank = comm.all_gather_object((times, correct))
            rows.append({"op": op, "bytes": _message_bytes(op, buffers, comm.size), "dtype": plan["dtype"],
                         "times_us": [max(t) for t in zip(*(p[0] for p in per_rank))],
                         "correct": all(p[1] for p in per_rank)})
    return rows


def _message_bytes(op: str, buffers, n: int) -> int:
    """nccl-tests' size: the gathered output for all_gather, the input otherwise."""
    tensor = buffers.recv if op == "all_gather" else buffers.send
    return tensor.numel() * tensor.element_size()


def write_rows(comm: Comm, plan: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    if comm.rank == 0:
        out = Path(plan["out"])
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(json.dumps({"backend": comm.backend, "world_size": comm.size, "rows": rows}))
        os.replace(tmp, out)


@exit_on_error
def bench_main(plan: dict[str, Any], progress_path: str) -> dict[str, Any]:
    """torch.distributed backends (gloo, nccl), started by torch elastic."""
    config = RunConfig.from_dict(plan["run"])
    with distributed(config) as ctx:
        comm = Comm(config.backend)
        write_rows(comm, plan, measure(comm, plan, ctx.device))
        return {"rank": ctx.rank, "run_id": config.run_id, "run_dir": str(config.run_dir)}


def mpi_main(plan_path: str) -> None:
    """MPI through mpi4py, started by mpirun; ranks come from the MPI launcher."""
    plan = json.loads(Path(plan_path).read_text())["payload"]
    torch.set_num_threads(1)
    comm = Comm("mpi")
    write_rows(comm, plan, measure(comm, plan, torch.device("cpu")))


if __name__ == "__main__":
    import sys

    mpi_main(sys.argv[1])
