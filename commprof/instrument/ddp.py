"""Wrap a model in DistributedDataParallel with commprof's options."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Protocol

import torch
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from commprof.instrument.call_site import call_site, unique
from commprof.results.job import BuiltDDP
from commprof.settings import DDP_ARGUMENTS, DDPOptions, applied_to_a_script

TIMED = "_commprof_timed_hook"  # the attribute of a DDP whose comm hook commprof times
COMM_HOOKS = {"fp16": default_hooks.fp16_compress_hook, "bf16": default_hooks.bf16_compress_hook}


def mpi_allreduce_hook(state, bucket):  # no annotations: DDP checks them and rejects strings
    """All-reduce a gradient bucket over MPI (mpi4py), as a `mpi:all_reduce` profiler range with its shape, and in the
    rank's record of its MPI collectives (what its hang watch says it waits in)."""
    from mpi4py import MPI

    from commprof.instrument import mpi_collectives

    world = MPI.COMM_WORLD
    tensor = bucket.buffer()
    with (
        mpi_collectives.entered("all_reduce", tensor),  # outside the profiler's range: not timed as the all-reduce
        torch._C._profiler._RecordFunctionFast("mpi:all_reduce", [tensor]),
    ):
        world.Allreduce(MPI.IN_PLACE, tensor.detach().numpy(), op=MPI.SUM)
    tensor.div_(world.Get_size())
    future: torch.futures.Future = torch.futures.Future()
    future.set_result(tensor)
    return future


class CommTiming(Protocol):
    """The whole-run record's recorder (worker/step_ledger.py)."""

    def timed(self, hook: Any, state: Any, group: Any = None) -> Any:
        """A comm hook timing `hook` (None: DDP's own all-reduce), called with `state`, over `group` (the DDP's)."""

    def watch(self, ddp: DistributedDataParallel) -> None:
        """Read each step's span from this DDP's own timers (a DDP on CPU that keeps its own all-reduce)."""


def keeps_its_own_all_reduce_on_cpu(ddp: DistributedDataParallel) -> bool:
    """On CPU tensors, any comm hook costs a pass over the gradients that DDP's own all-reduce saves (it divides them
    while copying them into its buckets); on a GPU that pass is a kernel of microseconds."""
    first = next((p for p in ddp.parameters() if p.requires_grad), None)
    return first is not None and first.device.type == "cpu"


def wrap_ddp(
    model: nn.Module,
    options: DDPOptions,
    device: torch.device,
    mpi_gradients: bool = False,
    timing: CommTiming | None = None,
) -> DistributedDataParallel:
    """DDP with commprof's options; with `mpi_gradients`, buckets are all-reduced over MPI by a comm hook; with
    `timing`, the hook it uses is timed."""
    ddp = DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=options.bucket_cap_mb,
        find_unused_parameters=options.find_unused_parameters,
        gradient_as_bucket_view=options.gradient_as_bucket_view,
        static_graph=options.static_graph,
    )
    hook = mpi_allreduce_hook if mpi_gradients else COMM_HOOKS.get(options.comm_hook)
    if timing is not None and hook is None and keeps_its_own_all_reduce_on_cpu(ddp):
        timing.watch(ddp)
    elif timing is not None:
        ddp.register_comm_hook(None, timing.timed(hook, None))
    elif hook is not None:
        ddp.register_comm_hook(None, hook)
    return ddp


def ddp_logging_data(ddp: DistributedDataParallel) -> dict[str, object]:
    """DDP's own measurements (ns) and bucket sizes, for cross-checking the traces."""
    data = ddp._get_ddp_logging_data()
    keys = (
        "avg_backward_compute_time",
        "avg_backward_comm_time",
        "avg_backward_compute_comm_overlap_time",
        "avg_forward_compute_time",
        "bucket_sizes",
        "rebuilt_bucket_sizes",
        "num_buckets_reduced",
    )
    return {k: data[k] for k in keys if k in data}


def bucket_sizes(model: nn.Module, bucket_cap_mb: float) -> list[int]:
    """The bucket sizes (bytes) DDP builds for this model, from DDP's own assignment function."""
    import torch.distributed as dist

    params = list[torch.Tensor](p for p in model.parameters() if p.requires_grad)[::-1]
    groups, _ = dist._compute_bucket_assignment_by_size(params, [int(bucket_cap_mb * 2**20)])
    return [sum(params[i].numel() * params[i].element_size() for i in group) for group in groups]


# DDP's own keyword arguments that commprof's options set; comm_hook is registered after construction
DDP_KEYWORDS = DDP_ARGUMENTS


FRAMEWORKS = (
    ("transformers", "transformers"),
    ("accelerate", "transformers"),
    ("lightning", "lightning"),
    ("pytorch_lightning", "lightning"),
)


def framework_of(frame) -> str:
    """Who built a DDP: Hugging Face (Trainer, through accelerate), Lightning, or the script itself."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        for prefix, framework in FRAMEWORKS:
            if module == prefix or module.startswith(prefix + "."):
                return framework
        frame = frame.f_back
    return "script"


class DDPOverrides:
    """While installed, every DistributedDataParallel the program builds, however it imported the class, gets the
    options that differ from DDP's defaults, and those in `forced` even at their default (a sweep's settings), but
    never a bucket_cap_mb of None (a script's own: what it passes, or DDP's default); what each one asked for and
    got is recorded in `built`."""

    def __init__(self, options: DDPOptions, forced: tuple[str, ...] = ()):
        self.options = applied_to_a_script(options, forced)
        self.comm_hook = self.options.pop("comm_hook", None)
        self.target = options.ddp_model
        cap = options.others_bucket_cap_mb  # what the models but the target get (advise's setting for one model)
        self.others: dict[str, Any] = {"bucket_cap_mb": cap} if cap is not None and self.target else {}
        self.owners: dict[int, str] = {}  # id of a parameter -> the name of the DDP model that holds it
        self.built: list[BuiltDDP] = []
        self._first: DistributedDataParallel | None = None  # the first built: the profiler starts at its forward
        self._measured: DistributedDataParallel | None = None  # kept alive for its logging data at the end
        self._original = DistributedDataParallel.__init__
        self._original_register = DistributedDataParallel.register_comm_hook
        self.on_first_forward: Callable[[], None] | None = None  # called once, as the first DDP's forward begins
        self.timing: CommTiming | None = None  # when set, every DDP's all-reduces are timed (worker/step_ledger.py)

    def install(self) -> None:
        original, signature, overrides = self._original, inspect.signature(self._original), self

        def __init__(ddp: DistributedDataParallel, *args: Any, **kwargs: Any) -> None:
            bound = signature.bind(ddp, *args, **kwargs)
            asked = {name: bound.arguments.get(name, signature.parameters[name].default) for name in DDP_KEYWORDS}
            module = bound.arguments["module"]
            module_class = type(getattr(module, "_orig_mod", module)).__name__  # torch.compile's, unwrapped
            where, written = call_site(inspect.currentframe())
            name = unique(written or module_class, [b.name for b in overrides.built])
            chosen = overrides.target in (None, name)  # the DDP the options are for (--ddp-model), else every one
            bound.arguments.update(overrides.options if chosen else overrides.others)
            original(*bound.args, **bound.kwargs)
            if overrides.comm_hook and chosen:
                ddp.register_comm_hook(None, COMM_HOOKS[overrides.comm_hook])
            elif overrides.timing is not None and keeps_its_own_all_reduce_on_cpu(ddp):
                overrides.timing.watch(ddp)  # at once: a forward pre-hook, even one removed, cost a script 4%
            elif overrides.timing is not None:  # at its first forward: the script may register its own hook first
                overrides._before_first_forward(ddp, lambda: overrides._time_default(ddp))
            ddp._set_ddp_runtime_logging_sample_rate(1)  # DDP's own averages cover every step
            overrides.built.append(
                BuiltDDP(
                    module=module_class,
                    name=name,
                    built_at=where,
                    built_by=framework_of(inspect.currentframe()),
                    parameters=sum(p.numel() for p in module.parameters() if p.requires_grad),
                    # per parameter, registration order: findings re-bucket them as DDP would for another cap
                    parameter_sizes=[p.numel() * p.element_size() for p in module.parameters() if p.requires_grad],
                    asked=asked,
                    groups=[str(getattr(ddp.process_group, "group_name", ""))],
                    applied={
                        **overrides.options,
                        **({"comm_hook": overrides.comm_hook} if overrides.comm_hook else {}),
                    }
                    if chosen
                    else dict(overrides.others),
                )
            )
            overrides.owners.update({id(p): name for p in module.parameters()})
            if overrides._measured is None and chosen:  # the first DDP the options are for: its own figures
                overrides._measured = ddp
            if overrides._first is None:
                overrides._first = ddp
                if overrides.on_first_forward is not None:
                    overrides._before_first_forward(ddp, overrides.on_first_forward)

        def register_comm_hook(ddp: DistributedDataParallel, state: Any, hook: Callable[..., Any]) -> None:
            timed = getattr(ddp, TIMED, None)
            if timed is not None:  # commprof's timed all-reduce is registered: the script's hook goes inside it
                timed.inner, timed.state = hook, state
            elif overrides.timing is not None:
                timed = overrides.timing.timed(hook, state, ddp.process_group)
                overrides._original_register(ddp, None, timed)
                setattr(ddp, TIMED, timed)
            else:
                overrides._original_register(ddp, state, hook)

        DistributedDataParallel.__init__ = __init__  # type: ignore[method-assign,assignment]
        DistributedDataParallel.register_comm_hook = register_comm_hook  # type: ignore[method-assign,assignment]

    def _time_default(self, ddp: DistributedDataParallel) -> None:
        """DDP's own all-reduce (on CUDA), timed, unless the script registered a hook (its own is then timed)."""
        if getattr(ddp, TIMED, None) is None and self.timing is not None:
            timed = self.timing.timed(None, ddp.process_group, ddp.process_group)  # its group, not the world's
            try:
                self._original_register(ddp, None, timed)
            except RuntimeError:  # the script registered a built-in hook (C++): its steps are timed, not its calls
                return
            setattr(ddp, TIMED, timed)

    @staticmethod
    def _before_first_forward(ddp: DistributedDataParallel, call: Callable[[], None]) -> None:
        def once(*_: Any) -> None:
            handle.remove()
            call()

        handle = ddp.register_forward_pre_hook(once)

    def optimizer_name(self, optimizer: Any) -> str:
        """'discriminator's Adam' where the script built several DDP models; else the optimizer's class."""
        kind = type(optimizer).__name__
        first = next((p for group in optimizer.param_groups for p in group["params"]), None)
        owner = self.owners.get(id(first)) if len(self.built) > 1 else None
        return f"{owner}'s {kind}" if owner else kind

    def uninstall(self) -> None:
        DistributedDataParallel.__init__ = self._original  # type: ignore[method-assign]
        DistributedDataParallel.register_comm_hook = self._original_register  # type: ignore[method-assign]

    def logging_data(self) -> dict[str, object]:
        """DDP's own measurements of the first DDP the program built that the options are for (--ddp-model's, else
        the first); then lets it go."""
        measured, self._measured, self._first = self._measured, None, None
        return ddp_logging_data(measured) if measured is not None else {}
