"""Run configuration: frozen, validated dataclasses passed from the CLI to the workers.

Each user-facing option is declared once, here (the settings applied to what a run trains with: commprof/settings.py),
as a field with `option(...)`: its default and its help. The CLI builds its options from these fields
(cli/options.py) and the request, the resolved RunConfig and the workers' copy are built from them by keyword."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commprof.backends import BACKENDS, by_name
from commprof.errors import UsageError
from commprof.fields import option, require
from commprof.settings import (
    DDP_ARGUMENTS,
    STRATEGIES,
    DDPOptions,
    DeepSpeedOptions,
    FSDPOptions,
    HorovodOptions,
    SettingOptions,
    changed_options,
)

DEVICES = ("cpu", "cuda")
PRECISIONS = ("fp32", "bf16", "fp16")
BUILTIN_MODELS = ("mlp", "transformer", "convnet", "mlstm")
MODEL_SIZES = ("small", "medium", "large")
SCRIPT_OUTPUTS = ("all", "rank0", "none")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True)
class ProfileSchedule:
    """torch.profiler schedule: skip `wait` steps, warm up `warmup`, record `active`."""

    wait: int = option(5, "Profiler schedule: steps skipped before warming up (DDP settles in 3; docs/benchmarks.md).")
    warmup: int = option(2, "Profiler schedule: warm-up steps (traced, then discarded).")
    active: int = option(10, "Profiler schedule: steps recorded in the trace.")

    def __post_init__(self) -> None:
        require(self.wait >= 0 and self.warmup >= 0, "--wait and --warmup must be >= 0")
        require(self.active >= 1, "--active must be >= 1")

    @property
    def total(self) -> int:
        return self.wait + self.warmup + self.active

    def phase(self, steps_done: int) -> str:
        """What progress calls the step just done (counted from 1): profiling while the profiler traces it (its
        warm-up and recorded steps), training before and after."""
        return "profiling" if self.wait < steps_done <= self.total else "training"

    def step_of(self, traced: int, first_traced: int) -> int:
        """The optimizer step (counted from 1) of a trace's ProfilerStep#`traced`, its first recorded range being
        ProfilerStep#`first_traced`: the schedule's first recorded step (a script's profiler starts numbering a step
        late, a built-in run's at step 1)."""
        return traced - first_traced + self.profiled_steps[0]

    @property
    def profiled_steps(self) -> tuple[int, int]:
        """The first and last optimizer step (from 1) the profiler records."""
        return self.wait + self.warmup + 1, self.wait + self.warmup + self.active

    @classmethod
    def parse(cls, text: str) -> ProfileSchedule:
        """Parse 'WAIT,WARMUP,ACTIVE', e.g. '10,5,10'."""
        parts = text.split(",")
        try:
            wait, warmup, active = (int(p) for p in parts)
        except ValueError:
            raise UsageError(f"--schedule must be WAIT,WARMUP,ACTIVE (three integers), got {text!r}") from None
        return cls(wait=wait, warmup=warmup, active=active)


@dataclass(frozen=True, kw_only=True)
class _StrategyOptions:
    """Each kind's knobs, declared once for the request and the config: a job of several kinds (an FSDP encoder and
    a DDP head) takes each kind's at once; validation refuses those of a kind --strategy does not name."""

    if TYPE_CHECKING:  # each subclass declares it as a field, with its own default and help

        @property
        def strategy(self) -> str:  # kinds.KINDS: the kind a command sets and measures
            ...

    ddp: DDPOptions = field(default_factory=DDPOptions)
    fsdp: FSDPOptions = field(default_factory=FSDPOptions)
    deepspeed: DeepSpeedOptions = field(default_factory=DeepSpeedOptions)
    horovod: HorovodOptions = field(default_factory=HorovodOptions)

    @property
    def options(self) -> SettingOptions:
        """The options of its strategy: DDP's, FSDP's or DeepSpeed's."""
        options: SettingOptions = getattr(self, self.strategy)
        return options


@dataclass(frozen=True)
class RunRequest(_StrategyOptions):
    """The options of the commands that launch training, as typed: None and 'auto' mean 'not given'
    and are resolved for this machine (launch.resolve) into a RunConfig."""

    nodes: int = option(1, "Number of nodes in the job; run commprof on each (needs --rdzv-endpoint).")
    gpus: int | None = option(None, "GPUs (ranks) per node; default: every visible GPU.")
    procs: int | None = option(None, "CPU ranks per node when there is no GPU [default: 2].")
    device: str = option("auto", "auto, cuda or cpu; auto picks cuda when a GPU is visible.")
    backend: str = option("auto", "auto, nccl, gloo or mpi; auto is nccl on GPUs, gloo on CPU.")
    model: str = option("mlp", "mlp, transformer, convnet, mlstm, or your own: pkg.mod:build or file.py:build.")
    model_size: str = option("small", "Size of a built-in model: small, medium or large.")
    strategy: str = option(
        "ddp",
        "ddp: DistributedDataParallel. fsdp: FSDP2's fully_shard on each block of the "
        "model, then on the whole (a script that shards its model itself needs no option). deepspeed: a DeepSpeed "
        "script, whose ZeRO options (--zero-stage, --reduce-bucket-size, ...) commprof sets in its config. horovod: a "
        "Horovod script, whose fusion buffer and cycle (--fusion-threshold-mb, --cycle-time-ms) commprof sets in its "
        "environment.",
    )
    batch_size: int = option(32, "Per-rank batch size.")
    steps: int = option(20, "Training steps (optimizer steps); at least wait + warmup + active.")
    precision: str = option("fp32", "fp32, bf16 or fp16 (autocast; fp16 adds a GradScaler).")
    run_id: str | None = option(None, "Name of the run folder [default: time stamp + random suffix].")
    traces_dir: Path = option(Path("traces"), "Where traces/<run-id>/ is written.")
    reports_dir: Path = option(Path("reports"), "Where reports/<run-id>/ is written.")
    seed: int = option(0, "Seed for weights and synthetic data.")
    rdzv_endpoint: str | None = option(None, "HOST:PORT of the c10d rendezvous, the same on every node.")
    local_addr: str | None = option(
        None,
        "This node's address as the other nodes reach it, as torchrun's --local-addr [default: the address this "
        "host's name resolves to].",
    )
    timeout_s: float = option(300.0, "Seconds to wait for rendezvous and for any collective.", flag="timeout")
    tf32: bool | None = option(
        None,
        "TF32 for float32 matmuls and convolutions on GPUs [default: torch's own, "
        "matmul off and cuDNN on; run.json records what ran].",
    )
    max_steps: int | None = option(
        None,
        "With a script: end it cleanly on every rank after this many optimizer steps. Sweep, tune and advise: "
        "each launch runs this many and times those after --warmup-steps [default: run: the script's own length; "
        "sweep, tune, advise: --warmup-steps + --steps-per-repeat, profiled: --warmup-steps + 1 + --profile-steps].",
    )
    whole_run: bool = option(
        True,
        "Record every step's time and its DDP all-reduces on every rank, from the first step to the last, without "
        "the profiler (the report's whole-run section). --no-whole-run: the profiled window only.",
    )
    script_output: str | None = option(
        None,
        "Your script's own stdout and stderr on this terminal, as torchrun --tee shows them: all (every rank's lines, "
        "each prefixed [rankN]:), rank0 (local rank 0's) or none; kept in traces/<run>/logs/ in every case "
        "[default: all for run, none with --quiet or --json; none for sweep, tune and advise, which launch it many "
        "times].",
    )
    script: tuple[str, ...] = ()  # the user's training script and its arguments (or -m module and arguments)
    schedule: ProfileSchedule = field(default_factory=ProfileSchedule)
    cli_args: tuple[str, ...] = ()  # the options as given on the command line (non-defaults), to repeat them
    named: tuple[str, ...] = ()  # the fields the command line named, even at their default values

    @property
    def ddp_forced(self) -> tuple[str, ...]:
        """DDP's arguments named on the command line: a script's DDP gets them even at their default."""
        return tuple(name for name in DDP_ARGUMENTS if name in self.named)


def option_fields(cls: type) -> list[dataclasses.Field]:
    """The fields of `cls` that are command-line options."""
    return [f for f in dataclasses.fields(cls) if "help" in f.metadata]


def by_fields(cls: type, values: dict[str, Any], **overrides: Any) -> Any:
    """`cls(**...)` from the values of those of its fields that `values` has (`overrides` win), by keyword."""
    return cls(**{**{f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values}, **overrides})


@dataclass(frozen=True)
class RunConfig(_StrategyOptions):
    """Everything a run needs, with every 'auto' already resolved."""

    run_id: str
    device: str = "cpu"
    backend: str = "gloo"
    nodes: int = 1
    procs_per_node: int = 2
    model: str = "mlp"
    model_size: str = "small"
    strategy: str = "ddp"
    batch_size: int = 32
    steps: int = 20
    seed: int = 0
    precision: str = "fp32"
    schedule: ProfileSchedule = field(default_factory=ProfileSchedule)
    traces_dir: Path = Path("traces")
    reports_dir: Path = Path("reports")
    rdzv_endpoint: str | None = None
    local_addr: str | None = None  # this node's address for torch's launcher; None: its host name
    timeout_s: float = 300.0
    timeout_given: bool = False  # --timeout named: it bounds a script's own longer process-group timeouts too
    backend_given: bool = False  # --backend named (compare's backends too): a script's init_process_group gets it
    tf32: bool | None = None  # None: torch's defaults
    script: tuple[str, ...] = ()  # a user's script and its arguments, run unmodified on every rank (worker.script)
    max_steps: int | None = None  # with a script: optimizer steps after which it ends
    script_output: str = "none"  # a script's stdout and stderr on the terminal: SCRIPT_OUTPUTS
    profiled: bool = True  # False: a script's timed launch in a sweep, no profiler at all
    whole_run: bool = True  # every step recorded on every rank (worker/step_ledger.py)
    ddp_forced: tuple[str, ...] = ()  # DDP options a script gets even at DDP's default value (a sweep's settings)
    launch_id: str = ""  # random per `commprof run` process: tells this launch's run folder from another's
    horovod_rendezvous: str | None = None  # HOST:PORT of the Horovod rendezvous launch/horovod.py started

    def __post_init__(self) -> None:
        require(
            bool(_RUN_ID.match(self.run_id)),
            f"--run-id {self.run_id!r} must be letters, digits, '.', '_' or '-' (at most 128)",
        )
        require(self.device in DEVICES, f"--device must be one of auto, {', '.join(DEVICES)}")
        require(self.backend in BACKENDS, f"--backend must be one of auto, {', '.join(BACKENDS)}")
        require(self.nodes >= 1, f"--nodes must be >= 1, got {self.nodes}")
        require(self.procs_per_node >= 1, f"ranks per node must be >= 1, got {self.procs_per_node}")
        require(self.model_size in MODEL_SIZES, f"--model-size must be one of {', '.join(MODEL_SIZES)}")
        require(
            self.strategy in STRATEGIES, f"--strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}"
        )
        chosen: Any = self.options  # the knobs of the kind --strategy names (settings.py)
        if chosen.backend_feature:
            able = ", ".join(b for b in BACKENDS if getattr(by_name(b), chosen.backend_feature))
            require(
                getattr(by_name(self.backend), chosen.backend_feature),
                f"--strategy {self.strategy} runs over {able}, not {self.backend}",
            )
        require(not chosen.script_only or bool(self.script), chosen.script_only)
        for strategy in STRATEGIES:
            options = getattr(self, strategy)
            kept = options is chosen or (options.beside_others and bool(self.script))
            changed = changed_options(options) if not kept else []
            require(not changed, f"--{', --'.join(changed)}: {options.owner}; they need --strategy {strategy}")
        require(self.batch_size >= 1, f"--batch-size must be >= 1, got {self.batch_size}")
        require(self.precision in PRECISIONS, f"--precision must be one of {', '.join(PRECISIONS)}")
        require(self.timeout_s > 0, "--timeout must be > 0")
        steps_option, steps = ("--max-steps", self.max_steps) if self.script else ("--steps", self.steps)
        require(
            steps is None or not self.profiled or steps >= self.schedule.total,
            f"{steps_option} {steps} is smaller than the profiler schedule "
            f"(wait {self.schedule.wait} + warmup {self.schedule.warmup} + active {self.schedule.active}"
            f" = {self.schedule.total}): ask for more steps, or a shorter --schedule WAIT,WARMUP,ACTIVE",
        )
        require(
            self.max_steps is None or bool(self.script),
            "--max-steps is for a script (commprof run -- train.py); a built-in model runs --steps",
        )
        require(
            self.ddp.bucket_cap_mb is not None or bool(self.script),
            "a setting without bucket_cap_mb (a script's own) needs a script",
        )
        require(
            self.ddp.ddp_model is None or bool(self.script),
            "--ddp-model is for a script that builds several DDP models (commprof run -- train.py)",
        )
        require(
            self.script_output in SCRIPT_OUTPUTS,
            f"--script-output must be one of {', '.join(SCRIPT_OUTPUTS)}, got {self.script_output!r}",
        )
        require(
            self.script_output == "none" or bool(self.script),
            "--script-output is for a script (commprof run -- train.py); a built-in model's ranks print nothing",
        )
        require(
            self.nodes == 1 or self.rdzv_endpoint is not None,
            "--nodes > 1 needs --rdzv-endpoint HOST:PORT (the same on every node)",
        )
        if self.rdzv_endpoint is not None:
            host, _, port = self.rdzv_endpoint.rpartition(":")
            require(
                bool(host) and port.isdigit() and 0 < int(port) < 65536,
                f"--rdzv-endpoint must be HOST:PORT, got {self.rdzv_endpoint!r}",
            )
        require(
            self.local_addr is None or (bool(self.local_addr) and not any(c.isspace() for c in self.local_addr)),
            f"--local-addr must be this host's address or name, got {self.local_addr!r}",
        )
        chosen = by_name(self.backend)
        require(
            self.device in chosen.devices,
            f"--backend {self.backend} needs --device {' or '.join(chosen.devices)} ({chosen.no_device(self.device)})",
        )

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node

    def request(self, **changes: Any) -> RunRequest:
        """The request this config was resolved from, every field, to run the job again (advise, a confirmation):
        what was named on the command line stays named (--timeout bounds the script's own groups, --backend is
        forced, DDP's options are set even at their defaults); `changes` win."""
        named = (*(["timeout_s"] if self.timeout_given else []), *(["backend"] if self.backend_given else []))
        ranks = {"gpus": self.procs_per_node} if self.device == "cuda" else {"procs": self.procs_per_node}
        return by_fields(RunRequest, vars(self), **ranks, named=(*named, *self.ddp_forced), **changes)

    @property
    def run_dir(self) -> Path:
        return self.traces_dir / self.run_id

    @property
    def report_dir(self) -> Path:
        return self.reports_dir / self.run_id

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["traces_dir"] = str(self.traces_dir)
        data["reports_dir"] = str(self.reports_dir)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        data = dict(data)
        data["schedule"] = ProfileSchedule(**data["schedule"])
        data["ddp"] = DDPOptions(**data["ddp"])
        data["fsdp"] = FSDPOptions(**data.get("fsdp", {}))
        data["deepspeed"] = DeepSpeedOptions(**data.get("deepspeed", {}))
        data["horovod"] = HorovodOptions(**data.get("horovod", {}))
        data["traces_dir"] = Path(data["traces_dir"])
        data["reports_dir"] = Path(data["reports_dir"])
        data["script"] = tuple(data.get("script", ()))
        data["ddp_forced"] = tuple(data.get("ddp_forced", ()))
        return cls(**data)
