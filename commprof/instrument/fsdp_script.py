"""A user's script's FSDP2: every fully_shard call it makes recorded (its module, its parameters, where, what it
asked for) and, with FSDP's options given (--strategy fsdp, a sweep's setting), those options set on top: the
resharding and the reduce dtype on each call, the prefetch depths on its blocks once the script has sharded them (at
the model's first forward). The models it sharded are told apart by their roots: a unit inside no other unit."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

from torch import nn

from commprof.instrument.call_site import call_site, unique
from commprof.instrument.fsdp import REDUCE_DTYPES, set_prefetch
from commprof.results.run_record import BuiltFSDP
from commprof.settings import FSDPOptions

_DTYPES = {dtype: name for name, dtype in REDUCE_DTYPES.items() if dtype is not None}


@dataclasses.dataclass
class _Unit:
    module: nn.Module
    module_class: str  # as the script built it (fully_shard makes it FSDP<class>)
    parameters: int
    name: str
    where: str


class FSDPOverrides:
    """While installed, `torch.distributed.fsdp.fully_shard` (however the script imports it) records each call and
    applies `options` where they differ from a script's own (settings.fsdp_as_written: none)."""

    def __init__(self, options: FSDPOptions | None = None):
        self.options = options or FSDPOptions()
        self.units: list[_Unit] = []
        self.asked: dict[str, Any] = {}
        self._hooks: list[Any] = []
        self._originals: list[tuple[Any, Callable[..., Any]]] = []

    @property
    def applied(self) -> dict[str, Any]:
        """The options commprof sets: those that differ from FSDP2's defaults (the others stay as the script wrote
        them)."""
        defaults = FSDPOptions()
        return {
            f.name: getattr(self.options, f.name)
            for f in dataclasses.fields(FSDPOptions)
            if getattr(self.options, f.name) not in (None, getattr(defaults, f.name))
        }

    def install(self) -> None:
        import torch.distributed._composable.fsdp as composable
        import torch.distributed.fsdp as fsdp

        original = fsdp.fully_shard
        for home in (fsdp, composable):
            if getattr(home, "fully_shard", None) is original:
                self._originals.append((home, original))
                home.fully_shard = self._wrapped(original)  # type: ignore[attr-defined]

    def uninstall(self) -> None:
        for home, original in self._originals:
            home.fully_shard = original
        self._originals.clear()

    def _wrapped(self, original: Callable[..., Any]) -> Callable[..., Any]:
        overrides = self

        def fully_shard(module: Any, **kwargs: Any) -> Any:
            from torch.distributed.fsdp import MixedPrecisionPolicy

            policy = kwargs.get("mp_policy") or MixedPrecisionPolicy()
            asked = {
                "reshard_after_forward": kwargs.get("reshard_after_forward"),
                "reduce_dtype": _DTYPES[policy.reduce_dtype] if policy.reduce_dtype in _DTYPES else "fp32",
            }
            applied = overrides.applied
            if "reshard_after_forward" in applied:
                kwargs["reshard_after_forward"] = applied["reshard_after_forward"]
            if "reduce_dtype" in applied:
                reduce_dtype = REDUCE_DTYPES[applied["reduce_dtype"]]
                kwargs["mp_policy"] = dataclasses.replace(policy, reduce_dtype=reduce_dtype)
            classes = [type(m).__name__ for m in (module if isinstance(module, (list, tuple)) else [module])]
            sharded = original(module, **kwargs)  # each module's class becomes FSDP<its class>
            overrides._record(module, classes, asked, inspect.currentframe())
            return sharded

        fully_shard.__wrapped__ = original  # type: ignore[attr-defined]
        return fully_shard

    def _record(self, module: Any, classes: list[str], asked: dict[str, Any], frame: Any) -> None:
        modules = list(module) if isinstance(module, (list, tuple)) else [module]
        for one, module_class in zip(modules, classes, strict=True):
            inside = {id(p) for u in self.units if _contains(one, u.module) for p in u.module.parameters()}
            where, written = call_site(frame)
            name = unique(written or module_class, [u.name for u in self.units])
            own = sum(p.numel() for p in one.parameters() if id(p) not in inside)
            self.units.append(_Unit(one, module_class, own, name, where))
            self._hooks.append(one.register_forward_pre_hook(self._first_forward))
        self.asked = self.asked or asked  # the first call's: a script passes the same to each

    def _first_forward(self, *_: Any) -> None:
        """The script has sharded its model: the prefetch depths on its blocks (each model's units but its root)."""
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
        if "forward_prefetch" in self.applied or "backward_prefetch" in self.applied:
            for root in self._roots():
                set_prefetch([u.module for u in self._units_of(root) if u is not root], self.options)

    def _roots(self) -> list[_Unit]:
        return [u for u in self.units if not any(o is not u and _contains(o.module, u.module) for o in self.units)]

    def _units_of(self, root: _Unit) -> list[_Unit]:
        return [u for u in self.units if _contains(root.module, u.module)]

    def built(self) -> list[BuiltFSDP]:
        """Each model the script sharded, by its root."""
        return [
            BuiltFSDP(
                module=root.module_class,
                name=root.name,
                built_at=root.where,
                parameters=sum(u.parameters for u in units),
                units=[u.module_class for u in units],
                unit_parameters=[u.parameters for u in units],
                asked=self.asked,
                applied=self.applied,
            )
            for root in self._roots()
            for units in [self._units_of(root)]
        ]


def _contains(outer: nn.Module, inner: nn.Module) -> bool:
    return outer is inner or any(m is inner for m in outer.modules())
