"""Set-up checks across hosts, before torch's elastic launch starts anything: this host's name (or --local-addr),
the rendezvous endpoint and GLOO_SOCKET_IFNAME. Each problem is one line naming the cause and the fix
(docs/reliability.md, Set-up failures); the checks themselves are pure, over what `Host` answers."""

from __future__ import annotations

import errno
import ipaddress
import os
import re
import socket
import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Callable, Mapping

from commprof.config import RunConfig
from commprof.errors import SetupError
from commprof.results.failure_facts import SetupProblem

ENDPOINT_PROBE_S = 3  # how long a rendezvous endpoint may take to answer (or refuse) a connection
GLOO_IFNAME = "GLOO_SOCKET_IFNAME"
# what a connection attempt can end in: it connected, it was refused (nothing listening: fine), or why it failed
CONNECTED, REFUSED = "connected", "refused"
_UNREACHABLE = {errno.EHOSTUNREACH: "no route to host", errno.ENETUNREACH: "network unreachable"}
# messages of a name that did not resolve, as getaddrinfo and torch's store client word them
NAME_NOT_RESOLVED = re.compile(
    r"gaierror|name resolution|Name or service not known|nodename nor servname|No address associated", re.I
)
_CONNECTING_TO = re.compile(r"trying to connect to \(([^,()\s]+), ?(\d+)\)")


def addresses(name: str) -> list[str]:
    """The addresses `name` resolves to; socket.gaierror (an OSError) when it resolves to none."""
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)})


def is_own_address(address: str) -> bool:
    """Whether this host holds `address`: a socket binds only to an address of its own (no packet is sent)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
    except OSError:
        return False
    return True


def connect(host: str, port: int, timeout: float) -> str:
    """CONNECTED, REFUSED, or why no connection was made (a timeout, no route)."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except ConnectionRefusedError:
        return REFUSED
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return _UNREACHABLE.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return CONNECTED


def store_answers(host: str, port: int, timeout: float) -> bool:
    """Whether a c10d store answers at host:port: a store answers in milliseconds, a foreign program maybe never."""
    from torch.distributed import TCPStore

    answered = threading.Event()

    def probe() -> None:
        try:
            TCPStore(host, port, is_master=False, timeout=timedelta(seconds=timeout))
            answered.set()
        except Exception:  # the store client raises several types; any of them means no store answered
            pass

    threading.Thread(target=probe, daemon=True).start()
    return answered.wait(timeout)


IFF_LOOPBACK = 0x8


def loopback_interface(name: str) -> bool:
    """Whether this host's interface `name` is a loopback (Linux: its flags in /sys; elsewhere: named lo)."""
    try:
        return bool(int(Path(f"/sys/class/net/{name}/flags").read_text(), 16) & IFF_LOOPBACK)
    except (OSError, ValueError):
        return name.startswith("lo")


@dataclass(frozen=True)
class Host:
    """What the checks ask of this host and its network; tests give their own answers."""

    name: Callable[[], str] = socket.getfqdn  # the name torch's launcher gives the other ranks as this node's address
    resolve: Callable[[str], list[str]] = addresses
    is_own: Callable[[str], bool] = is_own_address
    interfaces: Callable[[], list[str]] = lambda: [name for _, name in socket.if_nameindex()]
    is_loopback_interface: Callable[[str], bool] = loopback_interface
    connect: Callable[[str, int, float], str] = connect
    store_answers: Callable[[str, int, float], bool] = store_answers

    def resolves(self, name: str) -> bool:
        try:
            return bool(self.resolve(name))
        except OSError:
            return False


def own_address_problem(local_addr: str | None, nodes: int, host: Host) -> SetupProblem | None:
    """This node's address as torch's launcher publishes it: --local-addr, else this host's name, which must
    resolve (torch's c10d store is reached by it, on this node too)."""
    if local_addr is None:
        name = host.name()
        return None if host.resolves(name) else SetupProblem("host_name", name, one_node=nodes == 1)
    if not host.resolves(local_addr):
        return SetupProblem("local_addr", local_addr)
    found = host.resolve(local_addr)
    if not any(host.is_own(address) for address in found):
        return SetupProblem("local_addr_foreign", local_addr, () if found == [local_addr] else tuple(found))
    return None


def endpoint_problem(endpoint: str | None, host: Host, timeout: float = ENDPOINT_PROBE_S) -> SetupProblem | None:
    """The rendezvous endpoint as this node sees it: its host must resolve and answer within `timeout` (a refusal
    is an answer: nothing listens yet, node 0 hosts the store once it starts), and what answers must be a store."""
    if endpoint is None:
        return None
    name, _, port_text = endpoint.rpartition(":")
    port = int(port_text)
    if not host.resolves(name):
        return SetupProblem("endpoint_name", endpoint)
    outcome = host.connect(name, port, timeout)
    if outcome == REFUSED:
        return None
    if outcome != CONNECTED:
        return SetupProblem("endpoint_unreachable", endpoint, why=outcome)
    if not host.store_answers(name, port, timeout):
        return SetupProblem("endpoint_not_store", endpoint)
    return None


def gloo_interface_problem(environ: Mapping[str, str], host: Host) -> SetupProblem | None:
    """GLOO_SOCKET_IFNAME (one interface, or several comma-separated) must name interfaces this host has."""
    value = environ.get(GLOO_IFNAME)
    if not value:
        return None
    have = host.interfaces()
    missing = [name for name in value.split(",") if name.strip() not in have]
    if not missing:
        return None
    return SetupProblem("gloo_interface", value, tuple(missing), tuple(have))


def gloo_loopback_problem(config: RunConfig, environ: Mapping[str, str], host: Host) -> SetupProblem | None:
    """Gloo binds to GLOO_SOCKET_IFNAME's interfaces or, without it, to the address this host's name resolves to, or
    to loopback when it does not resolve: the other nodes cannot reach a loopback address (nodes on one machine,
    meeting at a loopback endpoint, can)."""
    if config.nodes == 1 or config.backend != "gloo":
        return None
    if config.rdzv_endpoint is None or _meets_on_loopback(config.rdzv_endpoint.rpartition(":")[0], host):
        return None
    chosen = [name.strip() for name in environ.get(GLOO_IFNAME, "").split(",") if name.strip()]
    if chosen:
        if not all(host.is_loopback_interface(name) for name in chosen):
            return None
        return SetupProblem("gloo_interface_loopback", environ[GLOO_IFNAME], interfaces=tuple(host.interfaces()))
    name = host.name()
    try:
        found = host.resolve(name)
    except OSError:
        found = []
    if found and not all(is_loopback(address) for address in found):
        return None
    return SetupProblem("gloo_loopback", name, tuple(found), tuple(host.interfaces()))


def _meets_on_loopback(endpoint_host: str, host: Host) -> bool:
    """The nodes meet at a loopback address (by number or by a name that resolves only to loopback): all on this
    machine, where loopback reaches every one."""
    if is_loopback(endpoint_host):
        return True
    try:
        found = host.resolve(endpoint_host)
    except OSError:
        return False
    return bool(found) and all(is_loopback(address) for address in found)


def check_setup(config: RunConfig, host: Host = Host(), environ: Mapping[str, str] = os.environ) -> None:
    """UsageError naming the first set-up problem of this node, before anything is launched."""
    for problem in (
        gloo_interface_problem(environ, host),
        own_address_problem(config.local_addr, config.nodes, host),
        endpoint_problem(config.rdzv_endpoint, host),
        gloo_loopback_problem(config, environ, host),
    ):
        if problem:
            raise SetupError(problem)


def is_loopback(name: str) -> bool:
    try:
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def endpoint_is_here(endpoint: str, host: Host = Host()) -> bool | None:
    """Whether this node hosts the rendezvous store, decided without this host's name, or None where torch's
    launcher can decide it itself: it resolves this host's name to compare it with the endpoint's host, and raises
    gaierror where the name does not resolve (what --local-addr is for)."""
    name = endpoint.rpartition(":")[0]
    if is_loopback(name) or host.resolves(host.name()):
        return None
    try:
        return any(host.is_own(address) for address in host.resolve(name))
    except OSError:
        return None


def failed_setup(message: str, config: RunConfig, host: Host = Host()) -> SetupProblem | None:
    """The set-up problem a launch that failed on the network (torch's own error in `message`) names, or None: a
    name that does not resolve (this host's own, the endpoint's, or the one torch's store client was connecting to)."""
    if not NAME_NOT_RESOLVED.search(message) and not _CONNECTING_TO.search(message):
        return None
    own = own_address_problem(config.local_addr, config.nodes, host)
    if own:
        return own
    aimed = _CONNECTING_TO.search(message)
    if aimed and not host.resolves(aimed.group(1)):
        return SetupProblem("peer_name", f"{aimed.group(1)}:{aimed.group(2)}")
    return endpoint_problem(config.rdzv_endpoint, host) if NAME_NOT_RESOLVED.search(message) else None
