"""Load a user's model from 'package.module:factory' or 'path/to/file.py:factory'.

Contract: the factory takes no arguments and returns either an nn.Module, or a tuple
(module, make_batch) or (module, make_batch, loss) where
  make_batch(batch_size: int, generator: torch.Generator) -> (inputs, target)
  loss(output, target) -> scalar tensor
Without make_batch, commprof feeds random inputs shaped for the model's first layer
(Linear, Conv1d/2d/3d or Embedding); without loss, it uses mean(output**2).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from commprof.errors import WorkloadError
from commprof.workloads.workload import Workload


def load_user_workload(spec: str) -> Workload:
    factory = _resolve_factory(spec)
    try:
        result = factory()
    except Exception as exc:  # the user's code: any exception is theirs to see
        raise WorkloadError(f"model factory {spec} raised {type(exc).__name__}: {exc}") from None
    model, make_batch, loss = _unpack(spec, result)
    return Workload(spec, model, make_batch or _infer_batch_maker(spec, model), loss or _default_loss)


def _resolve_factory(spec: str) -> Callable[[], Any]:
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise WorkloadError(
            f"--model {spec!r}: expected a built-in name, 'package.module:factory' or 'file.py:factory'"
        )
    if target.endswith(".py") or "/" in target:
        module = _import_file(spec, Path(target))
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            raise WorkloadError(f"--model {spec}: module {exc.name!r} not found") from None
        except Exception as exc:
            raise WorkloadError(f"--model {spec}: importing {target} raised {type(exc).__name__}: {exc}") from None
    factory = getattr(module, attr, None)
    if factory is None:
        raise WorkloadError(f"--model {spec}: {target} has no attribute {attr!r}")
    if not callable(factory):
        raise WorkloadError(f"--model {spec}: {attr!r} is not callable")
    return factory


def _import_file(spec: str, path: Path) -> Any:
    if not path.is_file():
        raise WorkloadError(f"--model {spec}: file {path} not found")
    name = f"commprof_user_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path.resolve())
    if module_spec is None or module_spec.loader is None:
        raise WorkloadError(f"--model {spec}: {path} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise WorkloadError(f"--model {spec}: loading {path} raised {type(exc).__name__}: {exc}") from None
    return module


def _unpack(spec: str, result: Any) -> tuple[nn.Module, Any, Any]:
    parts = result if isinstance(result, tuple) else (result,)
    if not 1 <= len(parts) <= 3 or not isinstance(parts[0], nn.Module):
        raise WorkloadError(
            f"--model {spec}: the factory returned {type(result).__name__}, expected an nn.Module "
            "or (module, make_batch[, loss])"
        )
    model, make_batch, loss = (*parts, None, None)[:3]
    for name, fn in (("make_batch", make_batch), ("loss", loss)):
        if fn is not None and not callable(fn):
            raise WorkloadError(f"--model {spec}: {name} returned by the factory is not callable")
    return model, make_batch, loss


def _infer_batch_maker(spec: str, model: nn.Module):
    first = next(
        (m for m in model.modules() if isinstance(m, (nn.Linear, nn.Embedding, nn.Conv1d, nn.Conv2d, nn.Conv3d))), None
    )
    if first is None:
        raise WorkloadError(
            f"--model {spec}: cannot infer an input shape (no Linear, Conv or Embedding layer); "
            "return (module, make_batch) from the factory"
        )

    def make(batch: int, gen: torch.Generator):
        if isinstance(first, nn.Linear):
            inputs = torch.randn(batch, first.in_features, generator=gen)
        elif isinstance(first, nn.Embedding):
            inputs = torch.randint(0, first.num_embeddings, (batch, 32), generator=gen)
        else:
            spatial = (32,) * (first.weight.dim() - 2)
            inputs = torch.randn(batch, first.in_channels, *spatial, generator=gen)
        return inputs, None

    return make


def _default_loss(output: Any, target: Any) -> torch.Tensor:
    if isinstance(output, (tuple, list)):
        output = output[0]
    return output.float().pow(2).mean()
