"""A user's script's FSDP2: every fully_shard call it makes recorded (its module, its parameters, where, what it
asked for) and, with FSDP's options given (--strategy fsdp, a sweep's setting), those options set on top: the
resharding and the reduce dtype on each call, the prefetch depths on its blocks once the script has sharded them (at
the model's first forward). The models it sharded are told apart by their roots: a unit inside no other unit."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from typing import Any, Callable

from torch import nn

from commprof.instrument.call_site import call_site, unique
from commprof.instrument.fsdp import REDUCE_DTYPES, set_prefetch
from commprof.results.job import BuiltFSDP
from commprof.settings import FSDPOptions

_DTYPES = {dtype: name for name, dtype in REDUCE_DTYPES.items() if dtype is not None}


@dataclasses.dataclass
class _Unit:
    modules: list[nn.Module]  # one call's: fully_shard([a, b]) makes one unit of both (one parameter group)
    module_class: str  # as the script built it (fully_shard makes it FSDP<class>)
    parameters: int  # those it holds, not its inner units'
    shard_elements: int  # its padded shard per rank: an all-gather moves this, or ranks times this; 0: not known
    name: str
    where: str
    asked: dict[str, Any]
    groups: list[str]  # the process groups its mesh's dimensions talk over, by name


class FSDPOverrides:
    """While installed, `torch.distributed.fsdp.fully_shard` (however the script imports it) records each call and
    applies `options` where they differ from FSDP2's defaults (settings.fsdp_as_written: none)."""

    def __init__(self, options: FSDPOptions | None = None):
        self.options = options or FSDPOptions()
        self.units: list[_Unit] = []
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
        """Where this torch has FSDP2's fully_shard (2.6 and later): wrapped in each module that exports it."""
        import torch.distributed.fsdp as fsdp

        found: Callable[..., Any] | None = getattr(fsdp, "fully_shard", None)
        if found is None:
            return
        original: Callable[..., Any] = found
        composable = sys.modules.get("torch.distributed._composable.fsdp")
        for home in (fsdp, *([composable] if composable is not None else [])):
            if getattr(home, "fully_shard", None) is original:
                self._originals.append((home, original))
                setattr(home, "fully_shard", self._wrapped(original))  # noqa: B010 (not every torch declares it)

    def uninstall(self) -> None:
        for home, original in self._originals:
            setattr(home, "fully_shard", original)  # noqa: B010
        self._originals.clear()

    def _wrapped(self, original: Callable[..., Any]) -> Callable[..., Any]:
        overrides = self

        @functools.wraps(original)  # its __dict__ too: contract's fully_shard.state, which pipelining calls
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
            modules = list(module) if isinstance(module, (list, tuple)) else [module]
            classes = "+".join(type(m).__name__ for m in modules)
            sharded = original(module, **kwargs)  # each module's class becomes FSDP<its class>
            overrides._record(modules, classes, asked, inspect.currentframe())
            return sharded

        return fully_shard

    def _record(self, modules: list[nn.Module], module_class: str, asked: dict[str, Any], frame: Any) -> None:
        inside = {id(p) for u in self.units if _contains(modules, u.modules) for m in u.modules for p in m.parameters()}
        where, written = call_site(frame)
        name = unique(written or module_class, [u.name for u in self.units])
        own = sum(p.numel() for m in modules for p in m.parameters() if id(p) not in inside)
        unit = _Unit(modules, module_class, own, _shard_elements(modules[0]), name, where, asked, _groups(modules[0]))
        self.units.append(unit)
        if "forward_prefetch" in self.applied or "backward_prefetch" in self.applied:  # else no hook: they cost
            self._hooks.append(modules[0].register_forward_pre_hook(self._first_forward))

    def _first_forward(self, *_: Any) -> None:
        """The script has sharded its model: the prefetch depths on its blocks (each model's units but its root)."""
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
        for root in self._roots():
            set_prefetch([u.modules[0] for u in self._units_of(root) if u is not root], self.options)

    def _roots(self) -> list[_Unit]:
        return [u for u in self.units if not any(o is not u and _contains(o.modules, u.modules) for o in self.units)]

    def _units_of(self, root: _Unit) -> list[_Unit]:
        return [u for u in self.units if _contains(root.modules, u.modules)]

    def built(self) -> list[BuiltFSDP]:
        """Each model the script sharded, by its root; what it asked for, its first unit's (its blocks')."""
        return [
            BuiltFSDP(
                module=root.module_class,
                name=root.name,
                built_at=root.where,
                parameters=sum(u.parameters for u in units),
                units=[u.module_class for u in units],
                unit_parameters=[u.parameters for u in units],
                unit_shard_elements=[u.shard_elements for u in units],
                asked=units[0].asked,
                applied=self.applied,
                groups=next((u.groups for u in units if u.groups), []),
            )
            for root in self._roots()
            for units in [self._units_of(root)]
        ]


def _contains(outer: list[nn.Module], inner: list[nn.Module]) -> bool:
    return any(o is i or any(m is i for m in o.modules()) for o in outer for i in inner)


def _groups(module: Any) -> list[str]:
    """The names of the process groups a unit's mesh talks over, one per dimension (HSDP's two); [] where this torch
    keeps them elsewhere."""
    try:
        mesh = module._get_fsdp_state()._fsdp_param_group.mesh_info.mesh
        return [str(mesh.get_group(dim).group_name) for dim in range(mesh.ndim)]
    except (AttributeError, RuntimeError):
        return []


def _shard_elements(module: Any) -> int:
    """The unit's padded shard per rank, as FSDP2 laid it out (0 where this torch keeps it elsewhere)."""
    try:
        group = module._get_fsdp_state()._fsdp_param_group
        return sum(p.padded_sharded_param_size.numel() for p in group.fsdp_params) if group is not None else 0
    except AttributeError:
        return 0
