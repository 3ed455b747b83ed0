"""Per-rank entry point of `commprof bench`: time each collective at each size, check its result."""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import torch

from commprof.config import RunConfig
from commprof.errors import what_went_wrong
from commprof.instrument.collectives import DTYPES, Comm
from commprof.instrument.profiler import cuda_synchronize
from commprof.worker.rank import distributed, exit_on_error


def bench_sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= factor
    return sizes


def measure(comm: Comm, plan: dict[str, Any], device: torch.device) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Per op and size, as nccl-tests times it: the result checked on fresh buffers, `warmup` untimed
    iterations, then `bursts` bursts of `iters` back-to-back iterations between two synchronisations. A burst's
    time per iteration is its slowest rank's. Also the ops this backend refuses on this device, with why."""
    dtype = DTYPES[plan["dtype"]]
    sync = functools.partial(cuda_synchronize, device.type == "cuda")
    rows, refused = [], {}
    for op in plan["ops"]:
        try:
            for nbytes in bench_sizes(plan["min_bytes"], plan["max_bytes"], plan["factor"]):
                rows.append(_measure_size(comm, plan, op, nbytes, dtype, device, sync))
        except RuntimeError as exc:  # refused on every rank alike (e.g. Gloo: this op on CUDA tensors)
            refused[op] = what_went_wrong(str(exc))
            comm.barrier()
    return rows, refused


def _measure_size(
    comm: Comm, plan: dict[str, Any], op: str, nbytes: int, dtype: torch.dtype, device: torch.device, sync
) -> dict[str, Any]:
    fresh = comm.buffers(op, nbytes, dtype, device)
    comm.run(op, fresh)
    sync()
    correct = comm.check(op, fresh)
    buffers = comm.buffers(op, nbytes, dtype, device)
    buffers.send.zero_()  # back to back, in place: zeros stay zeros (sums of ones would overflow)
    run = comm.ops[op]  # built once: the timed loop only calls it
    for _ in range(plan["warmup"]):
        run(buffers)
    sync()
    per_burst = []
    for _ in range(plan["bursts"]):
        comm.barrier()
        sync()
        start = time.perf_counter()
        for _ in range(plan["iters"]):
            run(buffers)
        sync()
        per_burst.append((time.perf_counter() - start) * 1e6 / plan["iters"])
    per_rank = comm.all_gather_object((per_burst, correct))
    return {
        "op": op,
        "bytes": _message_bytes(op, buffers, comm.size),
        "dtype": plan["dtype"],
        "times_us": [max(t) for t in zip(*(p[0] for p in per_rank), strict=False)],
        "correct": all(p[1] for p in per_rank),
    }


def _message_bytes(op: str, buffers, n: int) -> int:
    """nccl-tests' size: the gathered output for all_gather, the input otherwise."""
    tensor = buffers.recv if op == "all_gather" else buffers.send
    return tensor.numel() * tensor.element_size()


def write_rows(comm: Comm, plan: dict[str, Any], measured: tuple[list[dict[str, Any]], dict[str, str]]) -> None:
    rows, refused = measured
    hosts = comm.all_gather_object(socket.gethostname())
    if comm.rank == 0:
        out = Path(plan["out"])
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(
            json.dumps(
                {"backend": comm.backend, "world_size": comm.size, "hosts": hosts, "rows": rows, "refused": refused}
            )
        )
        os.replace(tmp, out)


@exit_on_error
def bench_main(plan: dict[str, Any], progress_path: str) -> dict[str, Any]:
    """torch.distributed backends (gloo, nccl), started by torch elastic."""
    config = RunConfig.from_dict(plan["run"])
    with distributed(config) as ctx:
        comm = Comm(config.backend)
        write_rows(comm, plan, measure(comm, plan, ctx.device))
        return {"rank": ctx.rank, "run_id": config.run_id, "run_dir": str(config.run_dir)}


def mpi_main(job: dict[str, Any]) -> None:
    """MPI through mpi4py, started by mpirun (worker/mpirun_rank.py); ranks come from the MPI launcher."""
    plan = job["payload"]
    torch.set_num_threads(1)
    comm = Comm("mpi")
    write_rows(comm, plan, measure(comm, plan, torch.device("cpu")))


if __name__ == "__main__":
    import sys

    from commprof.worker.mpirun_rank import as_mpirun_rank

    as_mpirun_rank(sys.argv[1], mpi_main)
