"""Built-in workloads and the loader for a user's model spec."""

from __future__ import annotations

import torch

from commprof.config import BUILTIN_MODELS
from commprof.errors import ModelRunError, WorkloadError
from commprof.workloads.workload import Workload, call_model


def load_workload(model: str, size: str) -> Workload:
    """A built-in name ('mlp', ...) or a user spec ('pkg.mod:build', 'file.py:build')."""
    if model in BUILTIN_MODELS:
        from commprof.workloads.models import build_builtin

        return build_builtin(model, size)
    if ":" not in model:
        raise WorkloadError(
            f"unknown model {model!r}: use one of {', '.join(BUILTIN_MODELS)}, "
            "'package.module:factory' or 'path/to/file.py:factory'"
        )
    from commprof.workloads.user import load_user_workload

    return load_user_workload(model)


def check_workload(workload: Workload, batch_size: int, seed: int) -> None:
    """Run one forward and loss on a tiny batch so a broken model fails before launch, clearly."""
    gen = torch.Generator().manual_seed(seed)
    try:
        inputs, target = workload.make_batch(min(batch_size, 2), gen)
    except Exception as exc:
        raise WorkloadError(f"{workload.name}: make_batch raised {type(exc).__name__}: {exc}") from None
    try:
        with torch.no_grad():
            output = call_model(workload.model, inputs)
            loss = workload.loss(output, target)
    except Exception as exc:
        raise ModelRunError(f"{workload.name}: forward on a batch failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise WorkloadError(f"{workload.name}: the loss must be a scalar tensor, got {type(loss).__name__}")
    if not any(p.requires_grad for p in workload.model.parameters()):
        raise WorkloadError(f"{workload.name}: the model has no trainable parameters, so DDP has nothing to all-reduce")


__all__ = ["Workload", "load_workload", "check_workload"]
