"""Shard a model with FSDP2 (`torch.distributed.fsdp.fully_shard`) as `commprof run --strategy fsdp` does: each
block, then the root. A block is each module of a container child (ModuleList, Sequential: a transformer's
layers, a network's stages) and each other child that holds parameters."""

from __future__ import annotations

from typing import Iterator

from torch import nn


def blocks(model: nn.Module) -> Iterator[nn.Module]:
    for child in model.children():
        if isinstance(child, (nn.ModuleList, nn.Sequential)):
            yield from (block for block in child if _has_parameters(block))
        elif _has_parameters(child):
            yield child


def shard(model: nn.Module) -> nn.Module:
    from torch.distributed.fsdp import fully_shard

    for block in list(blocks(model)):
        fully_shard(block)
    fully_shard(model)
    return model


def _has_parameters(module: nn.Module) -> bool:
    return any(p.requires_grad for p in module.parameters())
