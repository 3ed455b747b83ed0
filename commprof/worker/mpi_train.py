"""`commprof run --backend mpi` under mpirun: each rank reads its identity from the MPI launcher
(worker.mpi_identity). DDP still needs a torch process group for its
own broadcasts: rank 0 opens a torch TCPStore on a port the OS picks and tells the others over MPI.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from datetime import timedelta
from pathlib import Path


def main(plan_path: str) -> None:
    import torch.distributed as dist
    from mpi4py import MPI

    from commprof.config import RunConfig
    from commprof.errors import what_went_wrong
    from commprof.worker.mpi_identity import identity_from_env, node_local_from_mpi
    from commprof.worker.run import run_worker

    plan = json.loads(Path(plan_path).read_text())
    config = RunConfig.from_dict(plan["payload"])
    os.environ.update(identity_from_env(os.environ, node_local_from_mpi))
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
    try:
        result = run_worker(config, plan["progress"], store)
    except BaseException as exc:  # one line per failed rank for the launcher, then leave at once
        Path(plan["errors"], f"rank{rank}").write_text(f"{type(exc).__name__}: {what_went_wrong(str(exc))}")
        sys.stderr.flush()
        os._exit(1)
    if rank == 0:
        Path(plan["result"]).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
