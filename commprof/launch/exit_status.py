"""Every rank's exit status, as observed. torch's agent reports one failed rank per node (the first its poll finds),
then stops the others: their exit statuses stay in the process contexts it started, which it closes (and so joins)
before it returns. `observed_exits` keeps those contexts while a launch runs and reads every rank's status after it:
a rank SIGKILLed while its peer's error is the one torch reports is still known to have been killed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch.distributed.elastic.agent.server import local_elastic_agent


@contextmanager
def observed_exits() -> Iterator[dict[int, int]]:
    """While the block runs, every process context torch's local agent starts is kept; after it, the dict yielded
    holds local rank -> exit code (negative: the signal that ended it) for every rank whose end was seen."""
    codes: dict[int, int] = {}
    started: list[Any] = []
    original = local_elastic_agent.start_processes

    def recording(*args: Any, **kwargs: Any) -> Any:
        context = original(*args, **kwargs)
        started.append(context)
        return context

    local_elastic_agent.start_processes = recording
    try:
        yield codes
    finally:
        local_elastic_agent.start_processes = original
        for context in started:
            codes.update(exit_codes(context))


def exit_codes(context: Any) -> dict[int, int]:
    """local rank -> exit code of each process of a closed context: forked ranks (multiprocessing) or programs."""
    processes = getattr(getattr(context, "_pc", None), "processes", None)
    if processes is not None:
        return {i: p.exitcode for i, p in enumerate(processes) if p.exitcode is not None}
    handlers = getattr(context, "subprocess_handlers", None) or {}
    found = {}
    for local_rank, handler in handlers.items():
        code = handler.proc.poll()
        if code is not None:
            found[int(local_rank)] = code
    return found
