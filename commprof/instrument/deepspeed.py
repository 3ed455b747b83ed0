"""DeepSpeed engines a user's script builds, found without touching the script: when the script imports DeepSpeed,
its engine class is wrapped so that each engine is recorded as it was built (ZeRO's stage and the settings that shape
its communication) and its `step()` ends the training step (ZeRO's stages 1 and 2 all-gather the updated parameters
inside it, after the inner optimizer's step: the step is not over when that optimizer's step is). With ZeRO's
options given (--strategy deepspeed: a sweep's setting), DeepSpeed's config class is wrapped too, so that the config
the script gives deepspeed.initialize (a dict, or its JSON file) gets them in its "zero_optimization" section.

DeepSpeed is never imported here: a script that does not use it pays nothing."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from commprof.instrument.after_import import when_imported
from commprof.instrument.call_site import call_site, unique
from commprof.instrument.ddp import framework_of
from commprof.results.job import BuiltDeepSpeed

ENGINE_MODULE = "deepspeed.runtime.engine"
CONFIG_MODULE = "deepspeed.runtime.config"  # imported by the engine's module
# what shapes ZeRO's communication, by the names of DeepSpeed's config, read from the engine as it was built
SETTINGS = {
    "reduce_bucket_size": "zero_reduce_bucket_size",
    "allgather_bucket_size": "zero_allgather_bucket_size",
    "overlap_comm": "zero_overlap_comm",
    "contiguous_gradients": "zero_contiguous_gradients",
    "reduce_scatter": "zero_reduce_scatter",
}
STAGE3_SETTINGS = {"stage3_prefetch_bucket_size": "zero_prefetch_bucket_size"}


class DeepSpeedWatch:
    """While installed, every DeepSpeedEngine the program builds is recorded in `built`, and the first one's steps
    (at gradient accumulation boundaries) call `on_step` as they end."""

    def __init__(self, on_step: Callable[[], None], zero_config: dict[str, Any] | None = None):
        self.on_step = on_step
        self.zero_config = zero_config or {}  # set on top of every config the script gives DeepSpeed
        self.built: list[BuiltDeepSpeed] = []
        self.engine: Any = None  # the first engine: the one whose steps are the steps

    def install(self) -> None:
        when_imported(ENGINE_MODULE, self._wrap)

    def _wrap(self, module: Any) -> None:
        engine_class = module.DeepSpeedEngine
        init, step = engine_class.__init__, engine_class.step
        watch = self

        @functools.wraps(init)
        def __init__(engine: Any, *args: Any, **kwargs: Any) -> None:
            init(engine, *args, **kwargs)
            watch._record(engine, framework_of(inspect.currentframe()))

        @functools.wraps(step)
        def stepped(engine: Any, *args: Any, **kwargs: Any) -> Any:
            boundary = engine.is_gradient_accumulation_boundary()  # the inner optimizer steps only at one
            result = step(engine, *args, **kwargs)
            if boundary and engine is watch.engine:
                watch.on_step()
            return result

        engine_class.__init__, engine_class.step = __init__, stepped
        if self.zero_config:
            _set_in_every_config(sys.modules[CONFIG_MODULE].DeepSpeedConfig, self.zero_config)

    def _record(self, engine: Any, built_by: str) -> None:
        try:
            stage = int(engine.zero_optimization_stage())
            read = {**SETTINGS, **(STAGE3_SETTINGS if stage == 3 else {})}
            settings = {name: _plain(getattr(engine, method)()) for name, method in read.items()} if stage else {}
            parameters = sum(getattr(p, "ds_numel", p.numel()) for p in engine.module.parameters())
            module = type(engine.module).__name__
        except Exception:  # noqa: BLE001 - another DeepSpeed's engine: the script's run matters more than its record
            return
        where, written = call_site(inspect.currentframe(), "deepspeed", "model", position=1)  # initialize(args, model)
        name = unique(written or module, [b.name for b in self.built])
        applied = dict(self.zero_config)
        self.built.append(BuiltDeepSpeed(module, stage, settings, built_by, parameters, applied, name, where))
        if self.engine is None:
            self.engine = engine


def _set_in_every_config(config_class: Any, zero_config: dict[str, Any]) -> None:
    """Every DeepSpeed config built from now on gets `zero_config` in its "zero_optimization" section; the script's
    own dict is not changed."""
    init = config_class.__init__

    @functools.wraps(init)
    def __init__(ds_config: Any, config: Any, *args: Any, **kwargs: Any) -> None:
        init(ds_config, with_zero_config(config, zero_config), *args, **kwargs)

    config_class.__init__ = __init__


def with_zero_config(config: Any, zero_config: dict[str, Any]) -> Any:
    """A DeepSpeed config (a dict, or the path of its JSON file) with `zero_config` set in "zero_optimization"; one
    given otherwise (base64) as it is."""
    if isinstance(config, (str, os.PathLike)) and os.path.exists(config):
        import hjson  # DeepSpeed's own reader of config files (JSON with comments), installed with it

        with open(config) as file:
            config = hjson.load(file, object_pairs_hook=dict)
    if not isinstance(config, dict):
        return config
    return {**config, "zero_optimization": {**config.get("zero_optimization", {}), **zero_config}}


def _plain(value: Any) -> Any:
    """A config value as JSON keeps it: 5e5 given as a float, a bucket size read back as an int."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
