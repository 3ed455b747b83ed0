"""FSDP2 (`fully_shard`) on a built-in model: its options in settings.FSDPOptions."""

from __future__ import annotations

from typing import ClassVar

from commprof.kinds.base import JobKind
from commprof.settings import FSDPOptions, SettingOptions


class FSDPKind(JobKind):
    strategy: ClassVar[str] = "fsdp"
    options: ClassVar[type] = FSDPOptions
    title: ClassVar[str] = "FSDP"
    engine: ClassVar[str] = "FSDP (fully_shard)"
    short: ClassVar[str] = "FSDP"
    knobs: ClassVar[str] = "FSDP's options"

    def paste(self, options: SettingOptions, framework: str = "script", baseline: SettingOptions | None = None) -> str:
        """fully_shard's arguments (each block, then the model) and each block's prefetch set."""
        assert isinstance(options, FSDPOptions)  # this kind's own
        args = ["each block, then the model"] + (
            [] if options.reshard_after_forward else ["reshard_after_forward=False"]
        )
        if options.reduce_dtype != "fp32":
            dtype = {"bf16": "bfloat16", "fp16": "float16"}[options.reduce_dtype]
            args.append(f"mp_policy=MixedPrecisionPolicy(reduce_dtype=torch.{dtype})")
        parts = [f"fully_shard({', '.join(args)})"]
        if options.forward_prefetch:
            parts.append(f"blocks[i].set_modules_to_forward_prefetch(blocks[i + 1:i + {options.forward_prefetch + 1}])")
        if options.backward_prefetch > 1:
            depth = options.backward_prefetch
            parts.append(f"blocks[i].set_modules_to_backward_prefetch(blocks[max(0, i - {depth}):i][::-1])")
        return "; ".join(parts)


FSDP = FSDPKind()
