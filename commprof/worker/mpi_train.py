"""`commprof run --backend mpi` under mpirun: each rank reads its identity from the MPI launcher
(worker/mpirun_rank.py). DDP still needs a torch process group for its
own broadcasts: rank 0 opens a torch TCPStore on a port the OS picks and tells the others over MPI.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from commprof.worker.mpirun_rank import as_mpirun_rank


def train(plan: dict[str, Any]) -> None:
    import torch.distributed as dist
    from mpi4py import MPI

    from commprof.config import RunConfig
    from commprof.worker.run import run_worker

    config = RunConfig.from_dict(plan["payload"])
    world, rank = MPI.COMM_WORLD, int(os.environ["RANK"])
    store = None
    if rank == 0:
        # wait_for_workers=False: the others learn the port from the broadcast below
        store = dist.TCPStore(
            socket.gethostname(),
            0,
            int(os.environ["WORLD_SIZE"]),
            is_master=True,
            timeout=timedelta(seconds=config.timeout_s),
            wait_for_workers=False,
        )
    host, port = world.bcast((socket.gethostname(), store.port) if store is not None else None, root=0)
    if rank != 0:
        store = dist.TCPStore(
            host, port, int(os.environ["WORLD_SIZE"]), is_master=False, timeout=timedelta(seconds=config.timeout_s)
        )
    result = run_worker(config, plan["progress"], store)
    if rank == 0:
        Path(plan["result"]).write_text(json.dumps(result))


if __name__ == "__main__":
    as_mpirun_rank(sys.argv[1], train)
