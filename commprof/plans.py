"""What sweep, tune, advise and bench measure: their options as given (`SweepOptions`, declared once) and their
plans (`SweepPlan`, `BenchPlan`), frozen and validated, handed to the ranks as they are."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from commprof.config import RunConfig
from commprof.fields import option, require
from commprof.settings import (
    HOROVOD_FUSION_GRID_MB,
    OPTIONS_OF_STRATEGY,
    OWN_LABEL,
    ZERO_BUCKET_GRID,
    SettingOptions,
    elements,
    setting_label,
)
from commprof.values import CONVERT, OWN, parse_list

# the values each option a sweep compares takes by default, as the command line gives them (comma-separated)
DDP_SWEPT = {
    "bucket_cap_mb": "1,5,10,25,50,100",
    "comm_hook": "none",
    "grad_accum": "1",
    "static_graph": "false",
    "gradient_as_bucket_view": "false",
}
FSDP_SWEPT = {
    "reshard_after_forward": "true,false",
    "forward_prefetch": "0,2",
    "backward_prefetch": "1",
    "reduce_dtype": "fp32",
}
# DeepSpeed's ZeRO options, "own" for the script's config as written
DEEPSPEED_SWEPT = {
    "zero_stage": OWN,
    "reduce_bucket_size": ",".join(map(elements, ZERO_BUCKET_GRID)),
    "allgather_bucket_size": OWN,
    "overlap_comm": OWN,
}
# Horovod's fusion buffer and cycle, "own" for the job's environment as it is
HOROVOD_SWEPT = {"fusion_threshold_mb": ",".join(f"{mb:g}" for mb in HOROVOD_FUSION_GRID_MB), "cycle_time_ms": OWN}
SWEPT_OF = {"ddp": DDP_SWEPT, "fsdp": FSDP_SWEPT, "deepspeed": DEEPSPEED_SWEPT, "horovod": HOROVOD_SWEPT}
STEPS_PER_REPEAT = 4  # timed steps per setting per repeat, where nothing else decides it
ADVISE_TOP = 3  # the settings advise checks at most, the best predicted first


@dataclass(frozen=True)
class SweepOptions:
    """How sweep, tune and advise measure each setting, as the command line gives them: each option declared once,
    here (cli/options.with_options makes the three commands' options from these fields), and validated here."""

    repeats: int = option(
        5,
        "Interleaved repeats: in each, every setting takes its turn (with a script: one launch each; these first, "
        "then more while a setting's comparison with the baseline is undecided, up to --max-repeats). A built-in "
        "model's run in each of its launches.",
    )
    max_repeats: int | None = option(
        None,
        "The most launches a setting gets before its comparison with the baseline is called undecided, and the most "
        "fresh launches that confirm a recommendation [default: with a script 2 x --repeats (its repeats are "
        "launches); a built-in model's sweep 6 launches of --repeats repeats each, 3 at least (fewer where "
        "--max-repeats is less)].",
    )
    steps_per_repeat: int | None = option(
        None,
        f"Timed steps per setting per repeat [default: {STEPS_PER_REPEAT}; with a script and --max-steps: the "
        "launch's after --warmup-steps].",
    )
    warmup_steps: int = option(3, "Untimed steps per setting first (DDP rebuilds buckets after step 1).")
    profile_steps: int = option(3, "Profiled steps per setting, after the timed repeats.")
    max_live_settings: int | None = option(
        None,
        "Settings kept in memory at once (model, DDP buckets, optimizer); when fewer than all, each turn rebuilds "
        "its setting [default: as many as fit in GPU memory; all on CPU].",
    )

    def __post_init__(self) -> None:
        require(self.warmup_steps >= 1, "--warmup-steps must be >= 1 (DDP rebuilds its buckets after the first step)")
        require(self.repeats >= 2, "--repeats must be >= 2 (a confidence interval needs repeats)")
        require(
            self.max_repeats is None or self.max_repeats >= self.repeats,
            f"--max-repeats must be >= --repeats ({self.repeats}), got {self.max_repeats}",
        )
        require(self.steps_per_repeat is None or self.steps_per_repeat >= 1, "--steps-per-repeat must be >= 1")
        require(self.profile_steps >= 1, "--profile-steps must be >= 1")
        require(self.max_live_settings is None or self.max_live_settings >= 1, "--max-live-settings must be >= 1")

    def given(self) -> dict[str, Any]:
        """The options given (not None), by field name, for SweepPlan(**...)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


MEASURED_AS_USUAL = SweepOptions()  # every option at its default
DEFAULT_WORLD_SIZES = (1, 2, 4)  # scale's, where --world-sizes and --nodes are not given


@dataclass(frozen=True)
class ScaleOptions:
    """How `commprof scale` measures and predicts, as the command line gives them: each option declared once, here
    (cli/scale.py makes them from these fields), and validated here. The sizes, given as lists, are read there."""

    strong: bool = option(
        False,
        "Keep the global batch (--batch-size × the smallest size, or a script's --batch-argument) fixed; default: "
        "weak scaling, the same batch per rank.",
    )
    batch_argument: str | None = option(
        None,
        "With a script: its argument that holds the batch per rank, e.g. --batch-size (read for samples/s; with "
        "--strong, divided among the ranks). Without it a script's throughput is in optimizer steps of every rank "
        "per second.",
    )
    repeats: int = option(2, "Runs per size, interleaved (sizes up, then down).")
    link: str | None = option(
        None, "Link for the prediction, e.g. 25GB/s,5us [default: fitted to the measured all-reduces]."
    )
    base_lr: float = option(0.1, "Learning rate at the smallest size; larger sizes get the linear scaling rule.")

    def __post_init__(self) -> None:
        require(self.repeats >= 1, f"--repeats must be >= 1, got {self.repeats}")


MEASURED_AS_SCALE_DOES = ScaleOptions()


def sweep_grid(strategy: str, given: dict[str, str]) -> dict[str, list[Any]]:
    """The values each of the strategy's options takes, read from the lists given for every swept option (by field
    name); the other strategies' options must stay at their defaults."""
    swept = SWEPT_OF[strategy]
    wrong = [
        _flag(name)
        for other, defaults in SWEPT_OF.items()
        if other != strategy
        for name in defaults
        if given.get(name, defaults[name]) != defaults[name]
    ]
    require(
        not wrong,
        f"{', '.join(wrong)}: not swept with --strategy {strategy} (it sweeps {', '.join(map(_flag, swept))})",
    )
    return {name: parse_list(_flag(name), given.get(name, swept[name]), CONVERT[name]) for name in swept}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class SweepPlan:
    """Several settings (of DDP, or of FSDP with --strategy fsdp) measured in one launch: warmup each, then
    interleaved repeats.

    With `tune`, rank 0 chooses further bucket sizes after the first round (analysis.tune)."""

    run: RunConfig
    settings: tuple[SettingOptions, ...]
    baseline: SettingOptions
    warmup_steps: int = SweepOptions.warmup_steps
    repeats: int = SweepOptions.repeats
    steps_per_repeat: int = STEPS_PER_REPEAT
    profile_steps: int = SweepOptions.profile_steps
    tune: bool = False
    max_live_settings: int | None = None  # settings kept in memory at once; None: as many as fit (GPU), all (CPU)
    max_repeats: int | None = None  # a script's: repeats at most (None: 2 x repeats)

    def __post_init__(self) -> None:
        require(len(self.settings) >= 1, "give at least one setting to sweep")
        labels = [setting_label(s) for s in self.settings]
        require(len(set(labels)) == len(labels), f"settings repeat: {', '.join(labels)}")
        require(self.baseline in self.settings, "the baseline must be one of the settings")
        require(
            bool(self.run.script) or all(OWN_LABEL not in setting_label(s).split("_") for s in self.settings),
            "a setting without bucket_cap_mb (a script's own) needs a script",
        )
        require(
            all(isinstance(s, OPTIONS_OF_STRATEGY[self.run.strategy]) for s in self.settings),
            f"--strategy {self.run.strategy} sweeps its own options only",
        )
        rounds = ("repeats", "steps_per_repeat", "warmup_steps", "profile_steps", "max_live_settings", "max_repeats")
        SweepOptions(**{name: getattr(self, name) for name in rounds})  # validated where they are declared

    @property
    def repeat_budget(self) -> int:
        """A script's most interleaved repeats of a setting (and most pairs that confirm a claim)."""
        return self.max_repeats or 2 * self.repeats

    @property
    def steps_per_setting(self) -> int:
        """The steps each setting trains in a built-in model's sweep launch: its warm-up, every repeat, its profiled
        steps and one more, in which the profiler writes its trace."""
        return self.warmup_steps + self.repeats * self.steps_per_repeat + self.profile_steps + 1

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["run"] = self.run.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepPlan:
        run = RunConfig.from_dict(data["run"])
        options = OPTIONS_OF_STRATEGY[run.strategy]
        return cls(
            **{
                **data,
                "run": run,
                "baseline": options(**data["baseline"]),
                "settings": tuple(options(**s) for s in data["settings"]),
            }
        )


# what `commprof bench` times, named as the analysis names them (instrument/collectives runs them)
BENCH_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
BENCH_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32")


@dataclass(frozen=True)
class BenchRanks:
    """Where `commprof bench` measures, as the command line gives it: each option declared once, here (cli/bench.py
    makes them from these fields)."""

    procs: int | None = option(None, "Ranks: CPU processes, or GPUs on CUDA.", shown="every GPU, or 2")
    device: str = option("auto", "auto, cpu or cuda; auto is cuda when a GPU is visible (nccl needs cuda).")
    model: str | None = option(None, "Mark the message sizes DDP uses for this model's buckets.")
    bucket_cap_mb: float = option(25.0, "Bucket cap for --model.")
    timeout_s: float = option(600.0, "Seconds allowed per backend.", flag="timeout")


BENCH_HERE = BenchRanks()


@dataclass(frozen=True)
class BenchPlan:
    """What `commprof bench` measures on every rank: each op at sizes min_bytes, x factor, ... max_bytes. The options
    given as they are typed are declared here (cli/bench.py makes them from these fields); the message sizes and
    lists, given as text, are read by commprof/values.py."""

    ops: tuple[str, ...] = BENCH_OPS
    min_bytes: int = 1024
    max_bytes: int | None = None  # None: the device's default (commands.bench)
    factor: int = option(4, "Multiply the size by this between measurements.")
    dtype: str = option("float32", f"{', '.join(BENCH_DTYPES[:-1])} or {BENCH_DTYPES[-1]}.")
    warmup: int = option(5, "Untimed iterations per size.")
    iters: int = option(20, "Back-to-back iterations in each timed burst (as nccl-tests' -n).")
    bursts: int = option(
        5, "Timed bursts per size: the time per iteration is their median, the spread across them the noise."
    )

    def __post_init__(self) -> None:
        unknown = [op for op in self.ops if op not in BENCH_OPS]
        require(not unknown, f"unknown op: {', '.join(unknown)} (ops: {', '.join(BENCH_OPS)})")
        require(self.dtype in BENCH_DTYPES, f"--dtype must be one of {', '.join(BENCH_DTYPES)}, got {self.dtype!r}")
        for label, value, least in (
            ("--factor", self.factor, 2),
            ("--warmup", self.warmup, 0),
            ("--iters", self.iters, 1),
            ("--bursts", self.bursts, 2),
        ):
            require(value >= least, f"{label} must be >= {least}, got {value}")
        require(self.min_bytes > 0, f"--min-bytes must be > 0, got {self.min_bytes}")
        require(self.max_bytes is None or self.min_bytes <= self.max_bytes, "--min-bytes is larger than --max-bytes")
