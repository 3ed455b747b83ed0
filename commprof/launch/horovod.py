"""A Horovod script launched as horovodrun --gloo launches it, on one host: commprof starts the rendezvous server
horovodrun would (horovod.runner's RendezvousServer, which tells each rank its peers), and each rank gets the
environment horovodrun sets (instrument/horovod.py). A script is a Horovod job when its source imports horovod."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from commprof.config import RunConfig
from commprof.errors import UsageError

INSTALL = "bash benchmarks/install_horovod.sh"  # docs/frameworks/horovod.md
_IMPORTS_HOROVOD = re.compile(r"^\s*(?:import|from)\s+horovod\b", re.MULTILINE)


def uses_horovod(script: tuple[str, ...]) -> bool:
    """The script (or `-m` module) imports horovod."""
    if not script:
        return False
    if script[0] == "-m":
        spec = importlib.util.find_spec(script[1]) if len(script) > 1 else None
        path = Path(spec.origin) if spec is not None and spec.origin else None
    else:
        path = Path(script[0])
    try:
        return path is not None and bool(_IMPORTS_HOROVOD.search(path.read_text(errors="replace")))
    except OSError:
        return False


@contextmanager
def horovod_rendezvous(config: RunConfig) -> Iterator[RunConfig]:
    """The config with `horovod_rendezvous` set while the rendezvous server runs, where the script is a Horovod
    job; else the config as it is."""
    if not uses_horovod(config.script):
        yield config
        return
    if config.nodes > 1:
        raise UsageError(
            "the script trains with Horovod, which commprof launches on one host (as horovodrun -H localhost:N); "
            "across hosts, run horovodrun itself"
        )
    try:
        from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
        from horovod.runner.http.http_server import RendezvousServer
    except ImportError:
        raise UsageError(
            f"the script imports horovod, which is not installed here: {INSTALL} builds it into this environment"
        ) from None
    size = config.world_size
    server = RendezvousServer(verbose=0)
    port = server.start()
    try:
        server.init(get_host_assignments(parse_hosts(f"localhost:{size}"), size))
        yield dataclasses.replace(config, horovod_rendezvous=f"127.0.0.1:{port}")
    finally:
        server.stop()
