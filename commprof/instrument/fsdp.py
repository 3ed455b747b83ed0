"""Shard a model with FSDP2 (`torch.distributed.fsdp.fully_shard`) as `commprof run --strategy fsdp` does: each
block, then the root. A block is each module of a container child (ModuleList, Sequential: a transformer's
layers, a network's stages) and each other child that holds parameters."""

from __future__ import annotations

from typing import Iterator, cast

import torch
from torch import nn

from commprof.settings import FSDPOptions

REDUCE_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}  # None: the parameters' own


def blocks(model: nn.Module) -> Iterator[nn.Module]:
    for child in model.children():
        if isinstance(child, (nn.ModuleList, nn.Sequential)):
            yield from (block for block in child if _has_parameters(block))
        elif _has_parameters(child):
            yield child


def shard(model: nn.Module, options: FSDPOptions | None = None) -> nn.Module:
    """fully_shard on each block and the root, with `options`; prefetch beyond FSDP2's own set block by block
    (forward: the next N blocks; backward: the N blocks before, which run next)."""
    from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard  # noqa: F401 (FSDPModule: cast)

    options = options or FSDPOptions()

    policy = MixedPrecisionPolicy(reduce_dtype=REDUCE_DTYPES[options.reduce_dtype])
    sharded = list(blocks(model))
    for block in sharded:
        fully_shard(block, reshard_after_forward=options.reshard_after_forward, mp_policy=policy)
    fully_shard(model, reshard_after_forward=options.reshard_after_forward, mp_policy=policy)
    set_prefetch(cast(list[FSDPModule], sharded), options)  # fully_shard made each block an FSDPModule in place
    return model


def set_prefetch(shards: list, options: FSDPOptions) -> None:
    """Prefetch beyond FSDP2's own, block by block (`shards`: the blocks in forward order): in forward, the next
    `forward_prefetch` blocks; in backward, the `backward_prefetch` blocks before, which run next."""
    for index, shard_ in enumerate(shards):
        if options.forward_prefetch and index + 1 < len(shards):
            shard_.set_modules_to_forward_prefetch(shards[index + 1 : index + 1 + options.forward_prefetch])
        if options.backward_prefetch > 1 and index > 0:
            shard_.set_modules_to_backward_prefetch(shards[max(0, index - options.backward_prefetch) : index][::-1])


def _has_parameters(module: nn.Module) -> bool:
    return any(p.requires_grad for p in module.parameters())
