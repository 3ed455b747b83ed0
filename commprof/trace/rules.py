"""Classification rules as data: what counts as communication, launch ops, memory; op names; dtypes."""

from __future__ import annotations

import re
from functools import cache

from commprof.backends import BACKENDS, TABLE

# GPU kernels that execute a collective, by name: (backend, pattern); a new family is one entry. The backends'
# own kernels come from their table (commprof/backends.py).
COMM_KERNEL_FAMILIES = (
    *((b.name, b.kernels) for b in TABLE if b.kernels is not None),
    # torch symmetric memory: multimem_all_reduce_kernel, one_shot_all_reduce_kernel, two_shot_all_reduce_kernel...
    ("symm_mem", re.compile(r"(multimem|one_shot|two_shot)_\w*?(all_reduce|all_gather|reduce_scatter)", re.IGNORECASE)),
)
# CPU ops whose kernels are communication whatever the kernels are called (custom all-reduce implementations):
# (backend, pattern). Fused collective+matmul ops are left out: their kernels are mostly computation.
COMM_LAUNCHING_OPS = (
    ("symm_mem", re.compile(r"^symm_mem::(?!.*(matmul|fused))\w*(all_reduce|all_gather|reduce_scatter|all_to_all)")),
    (
        "custom",
        re.compile(
            r"^(vllm|_C_custom_ar|trtllm|sgl_kernel)::(?!.*(matmul|fused))\w*(all_?reduce|all_?gather)", re.IGNORECASE
        ),
    ),
)
KERNEL_CATS = frozenset({"kernel"})
MEMORY_CATS = frozenset({"gpu_memcpy", "gpu_memset"})
# The device waiting on an event or stream: idle for commprof, busy "other" time for HTA.
SYNC_CATS = frozenset({"cuda_sync"})
# CPU-side ranges during which a CPU backend is moving data (Gloo worker threads, MPI).
_CPU_BACKENDS = "|".join(b.cpu_ranges for b in TABLE if b.cpu_ranges)
_BACKEND_RANGES = "|".join(BACKENDS)  # `gloo:all_reduce`, `nccl:all_reduce`, ...
CPU_COMM_RANGE = re.compile(rf"^({_CPU_BACKENDS}):")
# CPU-side ops that launch, describe or wait for a collective: not transfer time, not computation.
COLLECTIVE_LAUNCH = re.compile(
    rf"^(record_param_comms|c10d::|c10d_functional::|_c10d_functional::|({_BACKEND_RANGES}):|ProcessGroup)"
)
# The collective-named CPU ranges around a kernel's launch on the launching thread, most trusted first: they name
# the collective (and its size) when the kernel's own args and External id say nothing (older Kineto).
ENCLOSING_TRUST = (
    re.compile(r"^record_param_comms"),
    re.compile(rf"^({_BACKEND_RANGES}):"),
    re.compile(r"^(c10d|c10d_functional|_c10d_functional)::"),
    *(pattern for _, pattern in COMM_LAUNCHING_OPS),
)
CPU_OP_CATS = frozenset({"cpu_op", "user_annotation"})
# CPU computation: operator ranges only. Annotations (DistributedDataParallel.forward,
# Optimizer.step#...) wrap operators and Python glue; torch-tb-profiler leaves them out too.
CPU_COMPUTE_CATS = frozenset({"cpu_op"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver"})
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
BACKWARD_OP = re.compile(r"^autograd::engine::evaluate_function")
# DDP's finalize_backward copies each reduced bucket back into the gradients: the last copy ends
# DDP's own "backward communication" interval.
BUCKET_COPY_BACK = re.compile(r"^torch\.distributed\.ddp\.reducer::copy_bucket_to_grad")
# The CPU op whose start marks a collective's launch (the outermost one DDP calls).
LAUNCH_OP = re.compile(r"^c10d::")
# FSDP2's record_function ranges on the training thread: what it is doing, for which module (its label).
FSDP_RANGE = re.compile(r"^FSDP::(?P<doing>[a-z_]+)(?: \((?P<module>[^)]*)\))?$")
# What a collective launched inside one of them is for. In post_backward_reduce a reduce-scatter is the
# gradient's; an all-reduce there is hybrid sharding's replicate all-reduce (Gloo, which has no
# reduce-scatter, runs FSDP's as an all-reduce: the launch op, c10d::_reduce_scatter_base_, tells them apart).
FSDP_PURPOSE = {"all_gather": "parameter all-gather", "post_backward_reduce": "gradient reduce-scatter"}
REPLICATE_ALL_REDUCE = "replicate all-reduce"
# DeepSpeed ZeRO's collectives by what they are for, from the phase they run in and their op (its own ranges are
# NVTX ranges, absent from a CPU trace): its gradient buckets are reduced in the backward pass (ZeRO-1 and 2:
# all-reduce or reduce-scatter), the updated parameters all-gathered after the inner optimizer's step (ZeRO-1 and 2)
# or around each module's forward and backward (ZeRO-3); a one-element all-reduce is a norm or an overflow flag.
ZERO_PURPOSE = {
    ("backward", "all_reduce"): "gradient reduction",
    ("backward", "reduce_scatter"): "gradient reduction",
    ("backward", "reduce"): "gradient reduction",
    ("forward", "all_gather"): "parameter all-gather",
    ("backward", "all_gather"): "parameter all-gather",
    ("optimizer", "all_gather"): "parameter all-gather",
}
ZERO_SCALAR = "norm or overflow flag"
# Tensor (and sequence) parallelism's collectives over a mesh dimension named as torchtitan and PyTorch's examples
# name it, by phase and op, where nothing else said what they are for: RowwiseParallel all-reduces its output in the
# forward, ColwiseParallel its input's gradient in the backward; sequence parallelism all-gathers its activations
# and reduce-scatters them (and the reverse in the backward).
TP_DIMENSIONS = frozenset({"tp"})
TP_PURPOSE = {
    ("forward", "all_reduce"): "TP activation all-reduce",
    ("backward", "all_reduce"): "TP input-gradient all-reduce",
    ("forward", "all_gather"): "SP activation all-gather",
    ("forward", "reduce_scatter"): "SP activation reduce-scatter",
    ("backward", "all_gather"): "SP gradient all-gather",
    ("backward", "reduce_scatter"): "SP gradient reduce-scatter",
}
# a pipeline's stage group ("pp", torchtitan's and PyTorch's examples' name): the first stage sends activations and
# receives their gradients, the last receives activations and sends gradients; a middle stage does both each way,
# told apart by the phase it ran in
PP_DIMENSIONS = frozenset({"pp", "pipe", "pipeline"})
PP_ACTIVATIONS, PP_GRADIENTS = "pipeline activation send/recv", "pipeline gradient send/recv"


def sends_in(name: str) -> bool | None:
    """A backend's range that says its direction ("gloo:send": True, "gloo:recv": False); None for any other."""
    kind = name.rsplit(":", 1)[-1].lower()
    return True if kind == "send" else False if kind == "recv" else None


def pp_purpose(sends: bool | None, stage: int, stages: int, phase: str | None) -> str:
    """What a pipeline stage's send or receive carries: a send of the first stage or a receive of the last is an
    activation, and the reverse a gradient; elsewhere, what its phase says."""
    first, last = stage == 0, stage == stages - 1
    if sends is not None and (first or last) and not (first and last):
        return PP_ACTIVATIONS if sends == first else PP_GRADIENTS
    return PP_GRADIENTS if phase == "backward" else PP_ACTIVATIONS


OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#")
PHASES = ("forward", "backward", "optimizer")


ZERO_REDUNDANCY = "ZeroRedundancyOptimizer"
ZERO_REDUNDANCY_PURPOSE = "ZeroRedundancyOptimizer parameter broadcast"  # each rank's updated shard, to the others


def zero_purpose(op: str, phase: str | None, nbytes: int | None, dtype: str | None) -> str | None:
    """What a collective of a DeepSpeed run is for (ZERO_PURPOSE): one element all-reduced is a flag."""
    if op == "all_reduce" and nbytes is not None and nbytes == dtype_size(dtype):
        return ZERO_SCALAR
    return ZERO_PURPOSE.get((phase or "", op))


# Names seen for each collective -> nccl-tests op name.
_OP_ALIASES = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "allgatherbase": "all_gather",
    "allgatherintocoalesced": "all_gather",
    "allgatherintotensorcoalesced": "all_gather",
    "reducescatter": "reduce_scatter",
    "reducescatterbase": "reduce_scatter",
    "reducescattertensorcoalesced": "reduce_scatter",
    "alltoall": "all_to_all",
    "alltoallbase": "all_to_all",
    "alltoallv": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "send_recv",
    "send": "send_recv",
    "recv": "send_recv",
    "gather": "gather",
    "scatter": "scatter",
    "barrier": "barrier",
    "allreducecoalesced": "all_reduce",
}
_OP_WORD = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|barrier", re.IGNORECASE)
_KERNEL_OP = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)|^nccl([A-Z][A-Za-z]+?)(?:Ring|Tree|Kernel)")

# nccl-tests bus bandwidth factors for a group of n ranks.
BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}

_DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int": 4,
    "int32": 4,
    "long": 8,
    "long int": 8,
    "int64": 8,
    "short": 2,
    "short int": 2,
    "int16": 2,
    "char": 1,
    "signed char": 1,
    "unsigned char": 1,
    "byte": 1,
    "uint8": 1,
    "int8": 1,
    "int8_t": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "complexfloat": 8,
    "complexdouble": 16,
}


@cache  # a trace repeats a few hundred names hundreds of thousands of times
def normalize_op(name: str) -> str | None:
    """'allreduce', 'AllReduce', 'all_reduce', 'nccl:all_reduce', 'c10d::allreduce_' -> 'all_reduce'."""
    key = name.split(":")[-1].lower().replace("_", "").strip()
    return _OP_ALIASES.get(key)


@cache  # a trace repeats a few hundred names hundreds of thousands of times
def op_in_name(name: str) -> str | None:
    """normalize_op, or the collective named inside a longer name: 'symm_mem::multimem_all_reduce_' -> 'all_reduce'."""
    found = normalize_op(name.rstrip("_"))
    if found is None and (word := _OP_WORD.search(name.split("(")[0])):
        found = normalize_op(word.group(0))
    return found


def op_from_kernel(name: str) -> str | None:
    """The kernel's implementation name: the last resort (a SendRecv kernel may run an all_to_all)."""
    match = _KERNEL_OP.match(name)
    return normalize_op(match.group(1) or match.group(2)) if match else op_in_name(name)


@cache  # a trace repeats a few hundred names hundreds of thousands of times
def comm_kernel_backend(name: str) -> str | None:
    return next((backend for backend, pattern in COMM_KERNEL_FAMILIES if pattern.search(name)), None)


@cache  # a trace repeats a few hundred names hundreds of thousands of times
def comm_launching_backend(name: str) -> str | None:
    return next((backend for backend, pattern in COMM_LAUNCHING_OPS if pattern.match(name)), None)


@cache  # a trace repeats a few hundred names hundreds of thousands of times
def trust_rank(name: str) -> int:
    """Position of a collective-named CPU range in ENCLOSING_TRUST (len() when it is none of them)."""
    return next((i for i, pattern in enumerate(ENCLOSING_TRUST) if pattern.match(name)), len(ENCLOSING_TRUST))


def dtype_size(dtype: str | None) -> int | None:
    if not dtype:
        return None
    key = dtype.lower().removeprefix("c10::").removeprefix("at::").removeprefix("torch.")
    return _DTYPE_BYTES.get(key)


def busbw_factor(op: str, group_size: int | None) -> float | None:
    factor = BUSBW_FACTORS.get(op)
    if factor is None or not group_size:
        return None
    return factor(group_size)
