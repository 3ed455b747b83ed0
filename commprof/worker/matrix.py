"""Per-rank entry point of `commprof backends`: try every op of the capability matrix."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

from commprof.config import RunConfig
from commprof.instrument.collectives import MATRIX_OPS, Comm
from commprof.worker.rank import distributed, exit_on_error, gpu_index

TRIED_BYTES = 16  # per rank: a few elements are enough to see whether the backend runs the op and gets it right


def tried(comm: Comm, device: torch.device) -> dict[str, Callable[[], bool]]:
    """Each op of the matrix, once on a few float32 elements a rank: whether this rank's result is right."""

    def attempt(op: str) -> Callable[[], bool]:
        def run() -> bool:
            buffers = comm.buffers(op, TRIED_BYTES * comm.size, torch.float32, device)
            comm.run(op, buffers)
            return comm.check(op, buffers)

        return run

    return {op: attempt(op) for op in MATRIX_OPS}


def try_each(ops: dict[str, Callable[[], bool]], sync: Callable[[], None]) -> dict[str, list]:
    """op -> [worked, reason] on this rank."""
    cells = {}
    for name in MATRIX_OPS:
        try:
            ok = ops[name]()
            cells[name] = [ok, "" if ok else "wrong values received"]
        except Exception as exc:  # the backend refusing the op is the answer we are after
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            cells[name] = [False, (lines[-1] if lines else type(exc).__name__)[:200]]
        try:
            sync()
        except Exception:
            pass
    return cells


def combine(per_rank: list[dict[str, list]]) -> dict[str, list]:
    """A cell works only when it worked on every rank; otherwise the first rank's reason."""
    return {
        op: next(([False, cells[op][1]] for cells in per_rank if not cells[op][0]), [True, ""]) for op in MATRIX_OPS
    }


def _write(path: str, data: Any) -> None:
    tmp = Path(path).with_name(".matrix.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


@exit_on_error
def matrix_main(plan: dict[str, Any], progress_path: str) -> dict[str, Any]:
    config = RunConfig.from_dict(plan["run"])
    with distributed(config) as ctx:
        results = {}
        for device in plan["devices"]:
            tensors_on = (
                torch.device("cuda", gpu_index(ctx.local_rank, torch.cuda.device_count()))
                if device == "cuda"
                else torch.device("cpu")
            )
            mine = try_each(tried(Comm(config.backend), tensors_on), dist.barrier)
            gathered: list[Any] = [None] * ctx.world_size
            dist.all_gather_object(gathered, mine)
            results[device] = combine(gathered)
        if ctx.rank == 0:
            _write(plan["out"], results)
        return {"rank": ctx.rank, "run_id": config.run_id, "run_dir": str(config.run_dir)}


def mpi_main(job: dict[str, Any]) -> None:
    """MPI through mpi4py, started by mpirun (worker/mpirun_rank.py)."""
    plan = job["payload"]
    comm = Comm("mpi")
    gathered = comm.all_gather_object(try_each(tried(comm, torch.device("cpu")), comm.barrier))
    if comm.rank == 0:
        _write(plan["out"], {"cpu": combine(gathered)})


if __name__ == "__main__":
    import sys

    from commprof.worker.mpirun_rank import as_mpirun_rank

    as_mpirun_rank(sys.argv[1], mpi_main)
