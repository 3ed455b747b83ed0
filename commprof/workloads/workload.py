"""The Workload record: a model, a synthetic batch maker and a loss."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

BatchMaker = Callable[[int, torch.Generator], tuple[Any, Any]]
LossFn = Callable[[Any, Any], torch.Tensor]


@dataclass
class Workload:
    name: str
    model: nn.Module
    make_batch: BatchMaker
    loss: LossFn

    @property
    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def parameter_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.model.parameters())

    @property
    def parameter_sizes(self) -> list[int]:
        """Bytes of each parameter with a gradient, in registration order (what DDP buckets)."""
        return [p.numel() * p.element_size() for p in self.model.parameters() if p.requires_grad]


def to_device(value: Any, device: torch.device) -> Any:
    """Move a tensor, or a tuple/list/dict of tensors, to `device`."""
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=True)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


def call_model(model: nn.Module, inputs: Any) -> Any:
    """Inputs may be one tensor, a tuple of positional args or a dict of keyword args."""
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, tuple):
        return model(*inputs)
    return model(inputs)
