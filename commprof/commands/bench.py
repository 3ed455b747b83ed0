"""`commprof bench`: collective micro-benchmark per backend, in the spirit of nccl-tests."""

from __future__ import annotations

import dataclasses
import json
import socket
import tempfile
from pathlib import Path

from commprof.backends import BACKENDS
from commprof.commands.common import ddp_only
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import prepare_report_dir
from commprof.config import RunRequest
from commprof.errors import CommprofError, RunFailed, UsageError
from commprof.plans import BENCH_HERE, BenchPlan, BenchRanks
from commprof.render import progress_words
from commprof.render.failure_words import error_text
from commprof.results.bench import BenchResult, BenchRow

GPU_MAX_BYTES, CPU_MAX_BYTES = 1 << 30, 16 << 20  # 1 GiB reaches NVLink's bandwidth; CPUs saturate far earlier


def bench(
    plan: BenchPlan,
    backends: list[str],
    ranks: BenchRanks = BENCH_HERE,
    name: str | None = None,
    reports_dir: Path = Path("reports"),
    feedback: Feedback = SILENT,
    nodes: int = 1,
    rdzv_endpoint: str | None = None,
    local_addr: str | None = None,
) -> Outcome:
    """Every op of the plan on each backend; a backend that cannot run here is listed with the reason, and so is
    an op that a backend refuses on this device. `device` auto is cuda when a GPU is visible; backend `auto` is
    nccl there, gloo on CPU; `procs` None is every visible GPU (CUDA) or 2; a plan without max_bytes goes to
    1 GiB on GPUs, 16 MiB on CPU. Across `nodes`, every node runs the same command; the node of rank 0 writes the
    result."""
    from commprof.analysis.bench import fit_alpha_beta, summarize
    from commprof.launch.resolve import MachineProbe, new_run_id, resolve_backend, resolve_device
    from commprof.render.outputs import write_result

    procs, model, bucket_cap_mb, timeout_s = ranks.procs, ranks.model, ranks.bucket_cap_mb, ranks.timeout_s
    probe = MachineProbe.detect()
    device = resolve_device(ranks.device, None, probe)
    backends = [resolve_backend(b, device, probe) if b == "auto" else b for b in backends]
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise UsageError(f"unknown backend: {', '.join(unknown)} (backends: {', '.join(BACKENDS)}, auto)")
    procs = procs if procs is not None else max(2, probe.gpu_count) if device == "cuda" else 2
    if procs * nodes < 2:
        raise UsageError(f"--procs must be >= 2 on one node, got {procs}")
    if plan.max_bytes is None:
        plan = dataclasses.replace(
            plan, max_bytes=max(plan.min_bytes, GPU_MAX_BYTES if device == "cuda" else CPU_MAX_BYTES)
        )
    if nodes > 1 and name is None:
        raise UsageError("--nodes > 1: pass the same --name NAME on every node, so the nodes meet in one benchmark")
    report_name = name or f"bench-{new_run_id()}"
    across = Across(nodes, rdzv_endpoint, local_addr, report_name)
    folder = prepare_report_dir(reports_dir, report_name) if nodes == 1 else reports_dir / report_name
    buckets = _model_buckets(model, bucket_cap_mb) if model else []
    rows, unavailable, hosts = [], {}, [socket.gethostname()] * procs
    written_elsewhere = False
    for backend in backends:
        with feedback.status(f"bench: {backend} on {procs * nodes} ranks"):
            try:
                raw = _measure(backend, plan, procs, device, timeout_s, across)
            except CommprofError as exc:
                unavailable[backend] = error_text(exc)
                continue
        if raw is None:  # the node of rank 0 has the results; every backend still needs this node's ranks
            written_elsewhere = True
            continue
        hosts = raw.get("hosts", hosts)
        rows += ddp_buckets_marked(summarize(backend, raw["world_size"], raw["rows"], buckets))
        unavailable.update({f"{backend} {op}": f"refused on {device}: {why}" for op, why in raw["refused"].items()})
    if written_elsewhere:
        return Outcome(None, note=progress_words.BENCH_ELSEWHERE)
    if nodes > 1:
        folder.mkdir(parents=True, exist_ok=True)
    result = BenchResult(
        name=report_name,
        world_size=len(hosts),
        rows=rows,
        fits=fit_alpha_beta(rows, len(hosts)),
        unavailable=unavailable,
        ddp_bucket_sizes=buckets,
        host=hosts[0],
        hosts=hosts,
    )
    return Outcome(result, write_result(result, folder))


def ddp_buckets_marked(rows: list[BenchRow]) -> list[BenchRow]:
    """DDP all-reduces its buckets: a row of another op at a bucket's size is no collective DDP runs for --model."""
    return [dataclasses.replace(row, ddp_bucket=row.ddp_bucket and row.op == "all_reduce") for row in rows]


@dataclasses.dataclass(frozen=True)
class Across:
    """The nodes a benchmark spans: each backend's launch meets at the endpoint under its own rendezvous id."""

    nodes: int
    rdzv_endpoint: str | None
    local_addr: str | None
    name: str


def _measure(backend: str, plan: BenchPlan, procs: int, device: str, timeout_s: float, across: Across) -> dict | None:
    """Rank 0's measurements; None on a node without rank 0."""
    from commprof.launch.job import Task, run_job
    from commprof.launch.resolve import MachineProbe, resolve
    from commprof.worker.bench import bench_main

    with tempfile.TemporaryDirectory(prefix="commprof-bench-") as tmp:
        out = Path(tmp) / "rows.json"
        cuda = device == "cuda"
        request = RunRequest(
            device=device,
            backend=backend,
            procs=None if cuda else procs,
            gpus=procs if cuda else None,
            traces_dir=Path(tmp) / "traces",
            reports_dir=Path(tmp) / "reports",
            timeout_s=timeout_s,
            nodes=across.nodes,
            rdzv_endpoint=across.rdzv_endpoint,
            local_addr=across.local_addr,
            run_id=f"{across.name}-{backend}" if across.nodes > 1 else None,
        )
        ddp_only(request, "bench")
        config = resolve(request, MachineProbe.detect())
        payload = {**dataclasses.asdict(plan), "out": str(out), "run": config.to_dict()}
        # under mpirun, --timeout ("seconds allowed per backend") bounds the whole benchmark: its MPI ops have no
        # timeout of their own, and no step feeds a hang watch
        task = Task(bench_main, "commprof.worker.bench", payload, mpi_time_limit_s=timeout_s)
        if not run_job(config, task).has_rank_zero:
            return None
        if not out.exists():
            raise RunFailed(f"{backend}: the benchmark wrote no results")
        return json.loads(out.read_text())


def _model_buckets(model: str, bucket_cap_mb: float) -> list[int]:
    from commprof.instrument.ddp import bucket_sizes
    from commprof.workloads import load_workload

    return bucket_sizes(load_workload(model, "small").model, bucket_cap_mb)
