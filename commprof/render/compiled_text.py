"""What a report says of a script's torch.compile (RunSummary.compiled): what it compiled and with which backend,
how Dynamo split the graph at DDP's buckets, and the steps it compiled in, left out of the whole run's figures."""

from __future__ import annotations

from commprof.results.run_record import Compiled
from commprof.results.whole_run import WholeRun
from commprof.values import human_bytes


def model_name(model: str, parameters: int | None, compiled: Compiled | None) -> str:
    """'GPT (124,439,808 parameters, compiled: torch.compile, inductor)': the model as the script wrote it (compiled
    where torch.compile compiled it, or DDP around it; not where it compiled a function of the script's)."""
    model_compiled = compiled is not None and compiled.what in (model, f"DistributedDataParallel({model})")
    mode = f", mode {compiled.mode}" if compiled and compiled.mode else ""
    how = f", compiled: torch.compile, {compiled.backend}{mode}" if compiled and model_compiled else ""
    return f"{model} ({parameters or 0:,} parameters{how})"


def compiled_line(compiled: Compiled, whole: WholeRun | None, built_ddp: bool) -> str:
    parts = [f"torch.compile compiled {compiled.what} with the {compiled.backend} backend"]
    if compiled.graphs:
        largest = max(compiled.graphs, key=len)
        cap = f", at DDP's bucket cap of {human_bytes(compiled.bucket_cap_bytes)}" if compiled.bucket_cap_bytes else ""
        sizes = ", ".join(human_bytes(size) for size in largest)
        parts.append(
            f"Dynamo split its graph at DDP's buckets (DDPOptimizer{cap}) into {len(largest)} part"
            f"{'s' if len(largest) != 1 else ''} ({sizes}, the last layers first), so that each bucket's all-reduce "
            "can start while the backward goes on"
        )
    elif built_ddp:
        parts.append(
            "Dynamo did not split its graph at DDP's buckets (torch._dynamo.config.optimize_ddp is off, or no graph "
            "was compiled while DDP's forward ran, as when DDP itself is compiled: compile the model, then wrap it in "
            "DDP): every all-reduce waits for the whole compiled backward"
        )
    steps = compiled.steps
    if steps:
        more = f" and {compiled.steps_more} more" if compiled.steps_more else ""
        took = f", {whole.compiled_ms / 1000:.1f} s" if whole is not None and whole.compiled_ms else ""
        left_out = "; left out of the whole run's figures and the profiler's cost" if whole is not None else ""
        parts.append(f"it compiled in step{'s' if len(steps) > 1 else ''} {_steps(steps)}{more}{took}{left_out}")
    return "; ".join(parts) + "."


def _steps(steps: list[int]) -> str:
    shown = [str(s) for s in steps[:10]]
    tail = f" (and {len(steps) - 10} more)" if len(steps) > 10 else ""
    return (", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]) + tail
