"""Horovod in a user's script, on each rank: the environment horovodrun gives a rank with Gloo (commprof launched
the ranks itself, and launch/horovod.py started the rendezvous server horovodrun would), the settings commprof applies
(settings.HorovodOptions: HOROVOD_FUSION_THRESHOLD, HOROVOD_CYCLE_TIME), rank 0's timeline (HOROVOD_TIMELINE: Horovod
writes it on its coordinator only), and what the script built with hvd.DistributedOptimizer.

Horovod's collectives run in its background thread, where the profiler sees nothing of them on CPU (Gloo); its
timeline holds them, and trace/horovod_timeline.py merges them into rank 0's trace."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from commprof.instrument.after_import import when_imported
from commprof.results.job import BuiltHorovod
from commprof.settings import MIB, HorovodOptions

MODULE = "horovod.torch"
TIMELINE_FILE = "horovod_timeline.json"
DEFAULT_FUSION_BYTES = 128 * MIB  # Horovod 0.28's HOROVOD_FUSION_THRESHOLD
DEFAULT_CYCLE_MS = 1.0  # and HOROVOD_CYCLE_TIME


def rank_environment(rendezvous: str, options: HorovodOptions, timeline: str) -> dict[str, str]:
    """What horovodrun --gloo sets for a rank on one host (horovod/runner/gloo_run.py), from the rank torch's
    launcher gave this process, with this setting's variables and the timeline on top."""
    address, port = rendezvous.rsplit(":", 1)
    rank, size = os.environ["RANK"], os.environ["WORLD_SIZE"]
    local_rank, local_size = os.environ["LOCAL_RANK"], os.environ.get("LOCAL_WORLD_SIZE", size)
    return {
        "HOROVOD_HOSTNAME": "localhost",
        "HOROVOD_RANK": rank,
        "HOROVOD_SIZE": size,
        "HOROVOD_LOCAL_RANK": local_rank,
        "HOROVOD_LOCAL_SIZE": local_size,
        "HOROVOD_CROSS_RANK": "0",
        "HOROVOD_CROSS_SIZE": "1",
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": address,
        "HOROVOD_GLOO_RENDEZVOUS_PORT": port,
        "HOROVOD_CONTROLLER": "gloo",
        "HOROVOD_CPU_OPERATIONS": "gloo",
        "HOROVOD_GLOO_IFACE": "lo",
        "HOROVOD_TIMELINE": timeline,
        **options.environment(),
    }


class HorovodWatch:
    """While installed, every hvd.DistributedOptimizer the script builds is recorded in `built`."""

    def __init__(self, applied: dict[str, str]):
        self.applied = applied
        self.built: list[BuiltHorovod] = []

    def install(self) -> None:
        when_imported(MODULE, self._wrap)

    def _wrap(self, module: Any) -> None:
        build = module.DistributedOptimizer
        watch = self

        @functools.wraps(build)
        def DistributedOptimizer(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            wrapped = build(optimizer, *args, **kwargs)
            watch._record(optimizer, kwargs)
            return wrapped

        module.DistributedOptimizer = DistributedOptimizer

    def _record(self, optimizer: Any, kwargs: dict[str, Any]) -> None:
        parameters = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
        compression = kwargs.get("compression")
        self.built.append(
            BuiltHorovod(
                optimizer=type(optimizer).__name__,
                parameters=sum(p.numel() for p in parameters),
                parameter_sizes=[p.numel() * p.element_size() for p in parameters],
                fusion_threshold_bytes=int(os.environ.get("HOROVOD_FUSION_THRESHOLD", DEFAULT_FUSION_BYTES)),
                cycle_time_ms=float(os.environ.get("HOROVOD_CYCLE_TIME", DEFAULT_CYCLE_MS)),
                backward_passes_per_step=int(kwargs.get("backward_passes_per_step", 1)),
                compression=getattr(compression, "__name__", "none").lower().replace("compressor", "") or "none",
                applied=dict(self.applied),
                timeline=TIMELINE_FILE,
            )
        )

    @staticmethod
    def running() -> bool:
        """Horovod is initialized in this process (the script called hvd.init())."""
        module = sys.modules.get(MODULE)
        return module is not None and bool(module.is_initialized())

    @staticmethod
    def shutdown() -> None:
        """Horovod stopped, its timeline closed (the script may have stopped before its own hvd.shutdown())."""
        if HorovodWatch.running():
            sys.modules[MODULE].shutdown()
