"""A script's rank after its script returned: commprof's own collectives never make a rank of the script wait, fail or
be stopped.

Under torchrun a rank whose script returned exits: its sockets close, and a peer still inside a collective with it
fails at once ("Connection closed by peer"). commprof's own measurements (the link probe, the casts' cost, the traces'
digests) need every rank, so a rank that returned says so through the launch's store (the elastic agent's, at
MASTER_ADDR:MASTER_PORT) and waits; once every rank's script has returned, they measure in a process group of
commprof's own, made for it. One key decides, written once (compare-and-set): `measure`, by the last rank to return,
or why not:
- a rank's script failed (its rank writes it as it fails);
- a rank still running its script waits in a collective while a peer's script has returned (its hang watch checks,
  once it has not stepped for a second): that collective can never complete, so the ranks that returned leave at once,
  as they would have under torchrun, and the one inside it fails as it would have;
- a node gave no sign for NODE_SILENT_S (each node's first rank counts up a key every BEAT_S on a job over nodes).
A rank told not to measure exits with its script's status, and writes `ended_rank<N>.json` (the launch's words for a
rank that ended its script while others ran on, launch/script_ends.py). A rank stopped while it waits (a peer was
killed) ends as its script did: 0. The measurements' patience is their own (OWN_GROUP_TIMEOUT_S): a failure there is a
note in the run record, never the job's failure."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import torch.distributed as dist

from commprof.results.hang import FOLDER_VARIABLE, EnteredCollective
from commprof.results.script_ended import ScriptEnded, ended_path

DECISION, MEASURE = "decision", "measure"
POLL_S = 0.1  # a waiting rank reads the decision this often
CHECK_S = 1.0  # a rank that has not stepped looks for peers that returned this often
BEAT_S, NODE_SILENT_S = 5.0, 60.0
STORE_TIMEOUT_S = 30.0
OWN_GROUP_TIMEOUT_S = 120.0
OWN_STORE_VARIABLE = "COMMPROF_STORE"  # HOST:PORT of a store of commprof's own, where there is no agent's


def launch_store(prefix: str) -> Any:
    """A client of the launch's store, keys under `prefix`: the one OWN_STORE_VARIABLE names (a script started by an
    MPI launcher, whose MASTER_PORT store is the script's own), else the elastic agent's; None where there is none."""
    own = os.environ.get(OWN_STORE_VARIABLE, "").rpartition(":")
    address, port = (own[0], own[2]) if own[0] else (os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT"))
    if not address or not port:
        return None
    try:
        store = dist.TCPStore(
            address, int(port), is_master=False, timeout=timedelta(seconds=STORE_TIMEOUT_S), wait_for_workers=False
        )
    except (RuntimeError, ValueError, OSError):
        return None
    return dist.PrefixStore(prefix, store)


class ScriptEnd:
    """One per rank. `returned()` from the main thread once the script returned: True to measure now (every rank's
    script returned), False to leave (why: `left_because`); `failed()` as the script fails; `while_stalled()` from the
    hang watch's thread."""

    def __init__(self, prefix: str, rank: int, world: int, collectives: Any):
        self.prefix, self.rank, self.world = prefix, rank, world
        self.collectives = collectives  # () -> list[EnteredCollective]: this rank's latest, from the Flight Recorder
        self.host = socket.gethostname()
        self.node = int(os.environ.get("GROUP_RANK", "0"))
        self.nodes = world // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", world)))
        self.first_of_node = os.environ.get("LOCAL_RANK", "0") == "0"
        self.left_because: str | None = None
        self._main_store: Any = None
        self._watch_store: Any = None  # its own client: a store client is not shared between threads
        self._checked = self._beaten = 0.0
        self._released = False  # it released the ranks that returned, or returned itself: nothing more to check

    def _store(self, watch: bool = False) -> Any:
        if watch:
            self._watch_store = self._watch_store or launch_store(self.prefix)
            return self._watch_store
        self._main_store = self._main_store or launch_store(self.prefix)
        return self._main_store

    def returned(self, steps: int) -> bool:
        self._released = True  # its own collectives from now on are commprof's: none is a script's wait
        if self.world < 2:
            return True
        store = self._store()
        if store is None:
            return self._leave(steps, "no launch store to meet the other ranks at (not started by an elastic launch)")
        try:
            if store.add("returned", 1) == self.world:
                store.compare_set(DECISION, "", MEASURE)
            return self._await_decision(store, steps)
        except (RuntimeError, OSError) as exc:  # the store's host is gone
            return self._leave(steps, f"the launch's store stopped answering ({str(exc).splitlines()[0]})")

    def _await_decision(self, store: Any, steps: int) -> bool:
        silent = NodeSilence(self.nodes)
        while not store.check([DECISION]):
            silent_node = silent.check(store)
            if silent_node is not None:
                store.compare_set(DECISION, "", f"node {silent_node} gave no sign for {NODE_SILENT_S:g} s")
                continue
            time.sleep(POLL_S)
        decision = store.get(DECISION).decode()
        return True if decision == MEASURE else self._leave(steps, decision)

    def _leave(self, steps: int, why: str) -> bool:
        self.left_because = why
        self.write(steps)
        return False

    def write(self, steps: int) -> None:
        folder = os.environ.get(FOLDER_VARIABLE)
        if folder:
            path = ended_path(Path(folder), self.rank)
            try:
                path.write_bytes(msgspec.json.encode(ScriptEnded(self.rank, self.host, steps, self.left_because)))
            except OSError:
                pass

    def failed(self, why: str) -> None:
        """This rank's script failed: no rank measures (those waiting leave at once)."""
        store = self._store()
        if store is not None and self.world > 1:
            try:
                store.compare_set(DECISION, "", f"rank {self.rank}'s script failed ({why})")
            except (RuntimeError, OSError):
                pass

    def while_stalled(self, stalled_s: float, steps: int) -> None:
        """From the hang watch's thread, every loop: this node's sign of life, on a job over nodes; once the rank has
        not stepped for CHECK_S, whether it waits in a collective while a peer's script has returned."""
        now = time.monotonic()
        try:
            if self.nodes > 1 and self.first_of_node and now - self._beaten >= BEAT_S:
                self._beaten = now
                store = self._store(watch=True)
                if store is not None:
                    store.add(f"alive/{self.node}", 1)
            if self._released or stalled_s < CHECK_S or now - self._checked < CHECK_S:
                return
            self._checked = now
            store = self._store(watch=True)
            if store is None or store.add("returned", 0) == 0:
                return
            inside = next((c for c in self.collectives() if not c.completed), None)
            if inside is not None:
                self._released = True
                store.compare_set(DECISION, "", waits_for_returned(self.rank, inside, steps))
        except (RuntimeError, OSError):  # the store's host is gone: the job's end says it
            return


def waits_for_returned(rank: int, inside: EnteredCollective, steps: int) -> str:
    group = "the default group" if inside.group == "0" else f"process group {inside.group}"
    return f"rank {rank} waits in {inside.op} #{inside.seq} of {group} after step {steps}"


class NodeSilence:
    """Each node's count of signs, read every BEAT_S: the first node whose count has not moved for NODE_SILENT_S."""

    def __init__(self, nodes: int):
        self.nodes = nodes
        self.seen: dict[int, tuple[int, float]] = {}
        self.read = 0.0

    def check(self, store: Any) -> int | None:
        now = time.monotonic()
        if self.nodes < 2 or now - self.read < BEAT_S:
            return None
        self.read = now
        for node in range(self.nodes):
            count = store.add(f"alive/{node}", 0)
            last = self.seen.get(node)
            if last is None or last[0] != count:
                self.seen[node] = (count, now)
            elif now - last[1] >= NODE_SILENT_S:
                return node
        return None


@contextmanager
def own_group(prefix: str, rank: int, world: int, use_cuda: bool) -> Iterator[None]:
    """A default process group of commprof's own, over the launch's store (keys under `prefix`), destroyed after:
    Gloo for the CPU, NCCL beside it on GPUs."""
    store = launch_store(prefix)
    if store is None:
        raise RuntimeError("no launch store to meet the other ranks at")
    backend = "cpu:gloo,cuda:nccl" if use_cuda else "gloo"
    timeout = timedelta(seconds=OWN_GROUP_TIMEOUT_S)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=timeout)
    try:
        yield
    finally:
        dist.destroy_process_group()
