"""A multi-host test bed on one machine: hosts made of network namespaces, joined by a bridge, each host's link
rate-limited with tc.

    with netbed(hosts=2, rate_mbit=400, folder=tmp_path) as bed:
        bed.run_on_each([["commprof", ...], ["commprof", ...]], timeout=300)
        bed.run_and_lose(["commprof", ...], host=1, how="link", ready=...)  # a host lost mid-run

A host is a network namespace with its own hostname (a UTS namespace) and a hosts file naming every host (bound
over /etc/hosts in a mount namespace): the commands it runs see only its loopback and its one interface, whose
address exists only inside this bed. The hosts meet on a bridge in a namespace of its own, so nothing is added to
the machine's own network and nothing a host sends can leave the machine. A rate limit is a tbf qdisc on each
host's interface (what leaves the host), so every host-to-host path runs at the rate; netem does not exist on these
machines, so no delay can be added. The context manager removes every namespace it made (and, with them, the
links and qdiscs in them; the processes still in them are killed first), also when the body fails; namespaces left
by a bed whose process died are removed by the next bed. Tests, benchmarks and docs' measurements all use this
one helper; `unavailable()` says why it cannot work here (not root, no `ip`, namespaces refused)."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PREFIX = "cpnb"  # every namespace this helper makes: cpnb<pid>-<bed>-<what>
_beds_made = itertools.count()
SUBNET = "10.231.0"  # the bed's addresses: SUBNET.1 is the first host; they exist only inside the bed
BRIDGE = "br0"
RDZV_PORT = 29400


@dataclass(frozen=True)
class Host:
    name: str  # its hostname
    namespace: str
    address: str
    interface: str  # its side of the link: GLOO_SOCKET_IFNAME
    folder: Path  # its own working folder: a node-local traces/ and reports/

    def argv(self, command: Sequence[str], hosts_file: Path) -> list[str]:
        """`command` run on this host: its namespace, its hostname and its /etc/hosts."""
        enter = 'hostname "$0" && mount --bind "$1" /etc/hosts && shift && exec "$@"'
        return [
            *("ip", "netns", "exec", self.namespace),
            *("unshare", "--uts", "--mount", "--propagation", "private"),
            *("sh", "-c", enter, self.name, str(hosts_file), *command),
        ]


@dataclass(frozen=True)
class NetBed:
    hosts: list[Host]
    hosts_file: Path
    bridge_namespace: str
    rate_mbit: float | None

    @property
    def rdzv_endpoint(self) -> str:
        return f"{self.hosts[0].address}:{RDZV_PORT}"

    def popen(self, host: Host, command: Sequence[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            host.argv(command, self.hosts_file),
            cwd=host.folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "120", **(env or {})},
        )

    def run_on_each(
        self, commands: Sequence[Sequence[str]], timeout: float = 300, env: dict[str, str] | None = None
    ) -> list[subprocess.CompletedProcess]:
        """commands[i] on host i, all started together; waits for every one (killing the rest past `timeout`)."""
        started = [(self.popen(h, c, env), c) for h, c in zip(self.hosts, commands, strict=True)]
        done = []
        try:
            for process, command in started:
                out, err = process.communicate(timeout=timeout)
                done.append(subprocess.CompletedProcess(command, process.returncode, out, err))
        finally:
            for process, _ in started:
                if process.poll() is None:
                    process.kill()
                    process.communicate()
        return done

    def lose(self, host: Host, how: str) -> None:
        """`host` goes: its link set down ("link"), or every process on it killed ("host"); "ranks": only the
        training ranks of the commprof processes running there (the fork server's children) are killed."""
        if how == "link":
            _ip("-n", host.namespace, "link", "set", host.interface, "down")
            return
        pids = [int(p) for p in _ip("netns", "pids", host.namespace, check=False).stdout.split()]
        if how == "ranks":
            servers = [p for p in pids if "multiprocessing.forkserver" in _cmdline(p)]
            pids = [p for p in pids if _parent(p) in servers]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def run_and_lose(
        self, command: Sequence[str], host: int, how: str, ready: Callable[[], bool], timeout: float = 300
    ) -> list[tuple[int, str, float]]:
        """`command` on every host; once `ready()`, host number `host` is lost (`lose`); each host's exit code, its
        stderr and its seconds from the loss to its exit (every one killed past `timeout`)."""
        started = [self.popen(h, command) for h in self.hosts]
        ends: list[tuple[int, str, float]] = []
        try:
            deadline = time.monotonic() + timeout
            while not ready():
                ended = [p for p in started if p.poll() is not None]
                if ended or time.monotonic() > deadline:
                    said = " | ".join(p.communicate()[1][-800:] for p in ended)
                    raise RuntimeError(f"the job never got to where a host is to be lost: {said}")
                time.sleep(0.2)  # polls a condition: the job's own step logs
            self.lose(self.hosts[host], how)
            lost_at = time.monotonic()
            for process in started:
                _, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
                ends.append((process.returncode, err, time.monotonic() - lost_at))
        finally:
            for process in started:
                if process.poll() is None:
                    process.kill()
                    process.communicate()
        return ends

    def set_rate(self, rate_mbit: float | None) -> NetBed:
        """Every host's link at `rate_mbit` (None: unlimited); the bed as it now is."""
        for host in self.hosts:
            _limit(host, rate_mbit)
        return NetBed(self.hosts, self.hosts_file, self.bridge_namespace, rate_mbit)


def commprof_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "commprof", *args]


def unavailable() -> str | None:
    """Why a bed cannot be made here, or None."""
    if os.geteuid() != 0:
        return "the multi-host test bed needs root (network namespaces)"
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None:
            return f"the multi-host test bed needs `{tool}`"
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"network namespaces cannot be made here: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@contextmanager
def netbed(hosts: int = 2, rate_mbit: float | None = None, folder: Path | None = None) -> Iterator[NetBed]:
    """`hosts` hosts named node0, node1, ... on one bridge, each link at `rate_mbit` (None: unlimited)."""
    if not 1 <= hosts <= 8:
        raise ValueError("a bed has 1 to 8 hosts")
    remove_stale()
    tag = f"{PREFIX}{os.getpid()}-{next(_beds_made)}"  # beds of one process may be alive at once
    made: list[str] = []
    try:
        bridge_ns = _namespace(f"{tag}-br", made)
        _ip("-n", bridge_ns, "link", "add", BRIDGE, "type", "bridge")
        _ip("-n", bridge_ns, "link", "set", BRIDGE, "up")
        base = folder or Path.cwd()
        members = []
        for i in range(hosts):
            host = Host(f"node{i}", _namespace(f"{tag}-h{i}", made), f"{SUBNET}.{i + 1}", "eth0", base / f"node{i}")
            host.folder.mkdir(parents=True, exist_ok=True)
            port = f"port{i}"
            _ip("link", "add", "name", host.interface, "netns", host.namespace, "type", "veth",
                "peer", "name", port, "netns", bridge_ns)  # fmt: skip
            _ip("-n", bridge_ns, "link", "set", port, "master", BRIDGE, "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", host.interface)
            _ip("-n", host.namespace, "link", "set", host.interface, "up")
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            _limit(host, rate_mbit)
            members.append(host)
        hosts_file = base / "hosts"
        hosts_file.write_text(
            "127.0.0.1 localhost\n" + "".join(f"{h.address} {h.name}\n" for h in members),
        )
        yield NetBed(members, hosts_file, bridge_ns, rate_mbit)
    finally:
        for namespace in reversed(made):
            _remove(namespace)


def remove_stale() -> None:
    """Remove the namespaces of beds whose process is gone."""
    for namespace in _namespaces():
        owner = namespace[len(PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove(namespace)


def namespaces_of_this_process() -> list[str]:
    return [n for n in _namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]


def _namespaces() -> list[str]:
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    return [line.split()[0] for line in listed if line.startswith(PREFIX)]


def _namespace(name: str, made: list[str]) -> str:
    _ip("netns", "add", name)
    made.append(name)
    return name


def _limit(host: Host, rate_mbit: float | None) -> None:
    _tc("-n", host.namespace, "qdisc", "del", "dev", host.interface, "root", check=False)
    if rate_mbit is not None:
        # a bucket of 4 ms at the rate (at least 64 KiB, above a GSO packet) and up to 100 ms queued
        burst = max(64 * 1024, int(rate_mbit * 1e6 / 8 * 0.004))
        _tc("-n", host.namespace, "qdisc", "add", "dev", host.interface, "root", "tbf",
            "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", "100ms")  # fmt: skip


def _remove(namespace: str) -> None:
    pids = _ip("netns", "pids", namespace, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _ip("netns", "del", namespace, check=False)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _tool("ip", args, check)


def _tc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _tool("tc", args, check)


def _tool(tool: str, args: Sequence[str], check: bool) -> subprocess.CompletedProcess:
    done = subprocess.run([tool, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(args)}: {done.stderr.strip()}")
    return done
