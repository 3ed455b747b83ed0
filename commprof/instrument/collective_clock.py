"""Every collective of every process group, timed at each call for the whole-run record (worker/step_ledger.py),
whatever issued it: FSDP's all-gathers and reduce-scatters, DeepSpeed's, a pipeline schedule's sends and receives
(all through torch.distributed's functions), tensor parallelism's (DTensor's functional collectives) and the
script's own calls. DDP's buckets are timed by its comm hook or its own timers (instrument/ddp.py); the clock stands
aside inside them.

A call is timed from its issue to its completion:
- a blocking call on CPU tensors, until it returns;
- an asynchronous one (`async_op=True`, batch_isend_irecv), until its work's future completes (on the backend's
  thread), or, where the work has none (Gloo's sends and receives), until the script waits for it;
- a functional collective (DTensor), until its result is waited for, which DTensor does at its first use;
- on CUDA tensors, by CUDA events: one on the current stream at the issue, one where it completes (a future's
  callback, on a stream that waits for the collective; or after the call or the wait, on the current stream).
A collective issued while the group's previous one still runs counts its wait behind it (the breakdown's range starts
when the backend starts it); each step keeps each group's union of calls, so calls in flight at once count once."""

from __future__ import annotations

import inspect
import threading
import time
from collections import deque
from typing import Any, Callable, Protocol

import torch
import torch.distributed as dist

from commprof.instrument.after_import import when_imported
from commprof.instrument.entering import EnteringRecord

# torch.distributed's functions -> the op as the analysis names it (trace/rules.py)
OPS = {
    "all_reduce": "all_reduce",
    "all_reduce_coalesced": "all_reduce",
    "all_gather": "all_gather",
    "all_gather_single": "all_gather",
    "all_gather_into_tensor": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_single": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter",
    "all_to_all": "all_to_all",
    "all_to_all_single": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "gather": "gather",
    "scatter": "scatter",
    "send": "send_recv",
    "recv": "send_recv",
    "batch_isend_irecv": "send_recv",  # isend and irecv are not wrapped: P2POp accepts them by identity alone
}
PIPELINING = "torch.distributed.pipelining.schedules"
# torch.distributed._functional_collectives' (DTensor's) -> the op
FUNCTIONAL = {
    "all_gather_single": "all_gather",
    "all_gather_tensor": "all_gather",
    "reduce_scatter_single": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter",
    "all_reduce": "all_reduce",
    "all_to_all_single": "all_to_all",
    "broadcast": "broadcast",
}


class Launch:
    """One collective: issued at `start`, done at `end` (perf_counter ns, or CUDA events), over `group`."""

    __slots__ = ("op", "bytes", "start", "end", "group")

    def __init__(self, op: str, nbytes: int, start: Any, group: str = ""):
        self.op, self.bytes, self.start, self.group = op, nbytes, start, group
        self.end: Any = None


class Launches(Protocol):
    """Where the clock puts what it timed (worker/step_ledger.StepLedger)."""

    use_cuda: bool
    launches: list[Launch]

    def stamp(self) -> Any:
        """Now: perf_counter ns, or a CUDA event recorded on the current stream."""

    def group_seen(self, name: str, desc: str, ranks: list[int]) -> None:
        """A process group the rank communicated over, first seen."""


_inside = threading.local()  # set while a timed call runs: what it calls itself is part of it
# the latest sends and receives, as group_record keeps a collective ([issued, epoch us; group; op; elements]): Gloo's
# never reach the Flight Recorder, and their profiler ranges name no group
P2P_ROWS: deque[list[Any]] = deque(maxlen=4096)


class standing_aside:
    """While it is entered, the clock times nothing on this thread (DDP's timed comm hook, commprof's own)."""

    def __enter__(self) -> None:
        _inside.depth = getattr(_inside, "depth", 0) + 1

    def __exit__(self, *_: object) -> None:
        _inside.depth -= 1


def _nbytes(value: Any) -> int:
    """The bytes of the largest tensor argument (a list counted whole): the gathered output of an all-gather, the
    input of a reduce-scatter, as nccl-tests count them."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, list | tuple):
        return sum(_nbytes(v) for v in value if isinstance(v, torch.Tensor))
    return 0


class CollectiveClock:
    """Installs timed wrappers over torch.distributed's collectives and DTensor's; `uninstall` restores them."""

    def __init__(self, sink: Launches, entering: EnteringRecord | None = None):
        self.sink = sink
        self.entering = entering  # where each call is recorded before it enters the backend (instrument/entering.py)
        self.descs: dict[str, str] = {}  # each group's description, as torch gives it
        self.originals: list[tuple[Any, str, Any]] = []
        # a functional collective's output (its storage: DTensor waits on views of it) -> its launch, until waited
        self.pending: dict[int, Launch] = {}
        self.groups: set[str] = set()
        self.installed = False
        self.futureless: set[tuple[str, str]] = set()  # (group, op) whose works have no future
        # the clock's own work, CPU time on every thread it ran on (a thread's time, so that a rank descheduled while
        # in it is not counted): what it costs the job
        self.own_ns = 0

    def install(self) -> None:
        self.installed = True
        when_imported(PIPELINING, self._wrap_pipelining)
        for name, op in OPS.items():
            if hasattr(dist, name):
                self._replace(dist, name, self._timed(getattr(dist, name), op, group_name))
        try:
            import torch.distributed._functional_collectives as funcol
        except ImportError:
            return
        for name, op in FUNCTIONAL.items():
            if hasattr(funcol, name):
                self._replace(funcol, name, self._timed(getattr(funcol, name), op, _functional_name))
        self._replace(funcol, "wait_tensor", self._waited(funcol.wait_tensor))

    def _wrap_pipelining(self, schedules: Any) -> None:
        """A pipeline schedule's sends and receives: all of one kind go to isend or irecv directly, not through
        batch_isend_irecv."""
        if self.installed and hasattr(schedules, "_batch_p2p"):
            self._replace(schedules, "_batch_p2p", self._timed(schedules._batch_p2p, "send_recv", group_name))

    def uninstall(self) -> None:
        self.installed = False
        for module, name, original in reversed(self.originals):
            setattr(module, name, original)
        self.originals.clear()
        self.pending.clear()

    def _replace(self, module: Any, name: str, wrapper: Callable[..., Any]) -> None:
        self.originals.append((module, name, getattr(module, name)))
        setattr(module, name, wrapper)

    def _timed(self, original: Callable[..., Any], op: str, name_of: Callable[[Any], str]) -> Callable[..., Any]:
        clock, at = self, _group_position(original)

        def group_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
            if at is None and args and isinstance(args[0], list) and args[0]:  # batch_isend_irecv: its first op's
                return name_of(getattr(args[0][0], "group", None))
            return name_of(kwargs.get("group", args[at] if at is not None and len(args) > at else None))

        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(_inside, "depth", 0):
                return original(*args, **kwargs)
            began = time.thread_time_ns()
            try:
                launch = clock._issued(op, args, kwargs, group_of)
            except Exception:  # noqa: BLE001 - the script's call matters more than its record
                launch = None
            clock.own_ns += time.thread_time_ns() - began
            with standing_aside():
                result = original(*args, **kwargs)
            if launch is None:
                return result
            began = time.thread_time_ns()
            try:
                return clock._completing(launch, result)
            except Exception:  # noqa: BLE001 - the call's own result, untimed
                return result
            finally:
                clock.own_ns += time.thread_time_ns() - began

        timed.__wrapped__ = original  # type: ignore[attr-defined]
        timed.__name__ = getattr(original, "__name__", op)
        timed.__doc__ = original.__doc__
        return timed

    def _issued(self, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], group_of: Callable[..., str]) -> Launch:
        group = group_of(args, kwargs)
        if group not in self.groups:
            self.groups.add(group)
            describe(self._group_seen, group)
        tensors = [*args, *kwargs.values()]
        if op == "send_recv" and args and isinstance(args[0], list):  # batch_isend_irecv: each op's tensor
            tensors = [getattr(p2p, "tensor", None) for p2p in args[0]]
        if self.entering is not None:
            listed = [t for t in tensors if isinstance(t, list | tuple)]  # all_gather's output list, and the like
            inputs = [t for t in tensors if isinstance(t, torch.Tensor)] or [t for x in listed for t in x]
            self.entering.write(
                op, group, self.descs.get(group, ""), [t for t in inputs if isinstance(t, torch.Tensor)]
            )
        if op == "send_recv":
            issued = time.time_ns() / 1000.0
            P2P_ROWS.extend([issued, group, op, t.numel()] for t in tensors if isinstance(t, torch.Tensor))
        sizes = [_nbytes(t) for t in tensors if isinstance(t, torch.Tensor | list | tuple)]
        launch = Launch(op, max(sizes, default=0), self.sink.stamp(), group)
        self.sink.launches.append(launch)
        return launch

    def _group_seen(self, name: str, desc: str, ranks: list[int]) -> None:
        self.descs[name] = desc
        self.sink.group_seen(name, desc, ranks)

    def _completing(self, launch: Launch, result: Any) -> Any:
        """Stamp the launch's end now (a blocking call) or when its work completes; the result, where a work has no
        future (Gloo's sends and receives), with that work in a wrapper that stamps it when the script waits."""
        works = result if isinstance(result, list) else [result]
        if isinstance(result, torch.Tensor) and type(result).__name__ == "AsyncCollectiveTensor":
            self.pending[_storage(result.elem)] = launch  # type: ignore[attr-defined]
            return result
        if not any(isinstance(w, dist.Work) for w in works):
            self._end(launch)
            return result
        left = [sum(isinstance(w, dist.Work) for w in works)]

        def one_done(_: Any = None) -> None:
            left[0] -= 1
            if left[0] == 0:
                self._end(launch)

        timed = [self._on_completion(launch, w, one_done) if isinstance(w, dist.Work) else w for w in works]
        return timed if isinstance(result, list) else timed[0]

    def _on_completion(self, launch: Launch, work: dist.Work, done: Callable[[], None]) -> dist.Work:
        """`work`, with `done` called when it completes: by its future, or where it has none, once the script has
        waited for it (the work returned in a wrapper that does). Whether a group's calls of an op have futures is
        learnt once: asking costs an exception where they have none."""
        key = (launch.group, launch.op)
        if key not in self.futureless:
            try:
                work.get_future().add_done_callback(lambda _: done())
                return work
            except RuntimeError:
                self.futureless.add(key)
        return _WaitedWork(work, done)

    def _end(self, launch: Launch) -> None:
        began = time.thread_time_ns()
        launch.end = self.sink.stamp()
        self.own_ns += time.thread_time_ns() - began

    def _waited(self, original: Callable[..., Any]) -> Callable[..., Any]:
        clock = self

        def wait_tensor(tensor: torch.Tensor) -> torch.Tensor:
            result = original(tensor)
            launch = clock.pending.pop(_storage(tensor), None) if clock.pending else None
            if launch is not None:
                clock._end(launch)
            return result

        return wait_tensor

    def step_ended(self) -> None:
        """Functional collectives never waited for by the step's end are left untimed."""
        self.pending.clear()


def _storage(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (a fake one, when traced)
        return id(tensor)


class _WaitedWork(dist.Work):
    """A work without a future, which calls `done` once it has been waited for."""

    def __init__(self, inner: dist.Work, done: Callable[[], None]):
        super().__init__()
        self.inner = inner
        self.done: Callable[[], None] | None = done

    def wait(self, *args: Any, **kwargs: Any) -> bool:
        result = self.inner.wait(*args, **kwargs)
        if self.done is not None:
            done, self.done = self.done, None
            done()
        return result

    def is_completed(self) -> bool:
        return self.inner.is_completed()

    def is_success(self) -> bool:
        return self.inner.is_success()

    def exception(self) -> Any:
        return self.inner.exception()

    def source_rank(self) -> int:
        return self.inner.source_rank()

    def result(self) -> list[torch.Tensor]:
        return self.inner.result()

    def synchronize(self) -> None:
        self.inner.synchronize()

    def get_future(self) -> torch.futures.Future:
        return self.inner.get_future()


def _group_position(function: Callable[..., Any]) -> int | None:
    """Where a function takes its `group` argument; None where it takes none (batch_isend_irecv)."""
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("group") if "group" in names else None


def _functional_name(group: Any) -> str:
    """The name of a functional collective's group: given as (mesh, dim), a group, a name or a list of ranks."""
    import torch.distributed._functional_collectives as funcol

    try:
        return funcol._resolve_group_name(group)
    except Exception:  # noqa: BLE001 - a form of group it does not know: the default group's
        return group_name(None)


def group_name(group: Any) -> str:
    """A process group's name; the default group's for None ("" where there is none)."""
    if group is None:
        if not dist.is_initialized():
            return ""
        group = dist.distributed_c10d._get_default_group()
    return str(getattr(group, "group_name", ""))


def describe(seen: Callable[[str, str, list[int]], None], name: str) -> None:
    """Call `seen` with the group's name, description and members."""
    try:
        group = dist.distributed_c10d._resolve_process_group(name)  # type: ignore[arg-type]
        seen(name, str(getattr(group, "group_desc", "")), dist.get_process_group_ranks(group))
    except Exception:  # noqa: BLE001 - a group torch no longer knows: named without its members
        seen(name, "", [])
