"""torch's c10d rendezvous, as commprof's launches use it: a fixed set of nodes (min = max, no restarts), so the
agent's store calls that only an elastic job needs are not made, and none can hold a node forever.

torch's agent asks the rendezvous store, every `monitor_interval`, how many nodes wait to join; when the store's host
is lost (its link down, the host gone), that call blocks in a socket read with no timeout of its own (TCPStore's
cancel path), the agent never looks at its ranks again, and the node waits until the kernel gives the connection up
(about 15 minutes). In a launch of fixed size no node can be waiting: the answer is 0, asked of nobody. Closing the
rendezvous at the end talks to the same store (its keep-alive thread may be stuck there too): it is given
SHUTDOWN_S and then left, on a daemon thread.

The handler also keeps who took part: each node's address (its host name, or --local-addr) by its rank among the
nodes, so that a failure can name the host it lost (launch/lost_peers.py)."""

from __future__ import annotations

import threading

from torch.distributed.elastic.rendezvous import RendezvousHandler, RendezvousInfo, RendezvousParameters
from torch.distributed.elastic.rendezvous import registry as torch_registry
from torch.distributed.elastic.rendezvous.api import rendezvous_handler_registry

BACKEND = "commprof-c10d"
SHUTDOWN_S = 5.0


class FixedRendezvous(RendezvousHandler):
    def __init__(self, inner: RendezvousHandler):
        self.inner = inner
        self.nodes: dict[int, str] = {}  # node rank -> its address, once the rendezvous completed
        self.node_rank = 0  # this node's

    def get_backend(self) -> str:
        return BACKEND

    @property
    def use_agent_store(self) -> bool:
        return self.inner.use_agent_store

    def next_rendezvous(self) -> RendezvousInfo:
        info = self.inner.next_rendezvous()
        state = getattr(getattr(self.inner, "_state_holder", None), "state", None)
        participants = getattr(state, "participants", {}) or {}
        self.nodes = {rank: str(getattr(node, "addr", "")) for node, rank in participants.items()}
        self.node_rank = info.rank
        return info

    def is_closed(self) -> bool:
        return self.inner.is_closed()

    def set_closed(self) -> None:
        self.inner.set_closed()

    def num_nodes_waiting(self) -> int:
        return 0  # a launch of fixed size: nobody can be waiting to join

    def get_run_id(self) -> str:
        return self.inner.get_run_id()

    def shutdown(self) -> bool:
        closed: list[bool] = []
        closing = threading.Thread(target=lambda: closed.append(self.inner.shutdown()), daemon=True)
        closing.start()
        closing.join(SHUTDOWN_S)
        return bool(closed and closed[0])


latest: list[FixedRendezvous] = []  # the handler of this process's latest launch (one kept: it holds a store client)


def _create(params: RendezvousParameters) -> RendezvousHandler:
    handler = FixedRendezvous(torch_registry._create_c10d_handler(params))
    latest[:] = [handler]
    return handler


def register() -> None:
    """Make BACKEND known to torch's launcher (once per process)."""
    try:
        rendezvous_handler_registry.register(BACKEND, _create)
    except ValueError:  # already registered, by this module's earlier import in this process
        pass
