"""`commprof bench`: collective micro-benchmark per backend, in the spirit of nccl-tests."""

from __future__ import annotations

from contextlib import nullcontext
import re
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from commprof.cli import console

Opt = typer.Option
_SIZE = re.compile(r"^(\d+)([KMG]?)B?$", re.IGNORECASE)


def parse_size(option: str, text: str) -> int:
    from commprof.errors import UsageError

    match = _SIZE.match(text.strip())
    if not match or int(match.group(1)) <= 0:
        raise UsageError(f"{option} must be a positive size like 1024, 64K, 16M or 1G, got {text!r}")
    return int(match.group(1)) * 1024 ** " KMG".index(match.group(2).upper() or " ")


def bench(
    backend: Annotated[str, Opt(help="Backends to measure, comma-separated: gloo, nccl, mpi.")] = "gloo",
    ops: Annotated[str, Opt(help="Collectives, comma-separated.")] = "all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all,send_recv",
    min_bytes: Annotated[str, Opt(help="Smallest message (e.g. 1K).")] = "1K",
    max_bytes: Annotated[str, Opt(help="Largest message (e.g. 16M).")] = "16M",
    factor: Annotated[int, Opt(help="Multiply the size by this between measurements.")] = 4,
    dtype: Annotated[str, Opt(help="float32, float16, bfloat16, float64 or int32.")] = "float32",
    warmup: Annotated[int, Opt(help="Untimed iterations per size.")] = 3,
    iters: Annotated[int, Opt(help="Timed iterations per size (median and spread over them).")] = 10,
    procs: Annotated[int, Opt(help="Ranks (CPU processes, or GPUs with --device cuda).")] = 2,
    device: Annotated[str, Opt(help="cpu or cuda (nccl needs cuda).")] = "cpu",
    model: Annotated[Optional[str], Opt(help="Mark the message sizes DDP uses for this model's buckets.")] = None,
    bucket_cap_mb: Annotated[float, Opt(help="Bucket cap for --model.")] = 25.0,
    name: Annotated[Optional[str], Opt(help="Report folder name [default: bench-<time stamp>].")] = None,
    reports_dir: Annotated[Path, Opt(help="Where reports/<name>/ is written.")] = Path("reports"),
    timeout: Annotated[float, Opt(help="Seconds allowed per backend.")] = 600.0,
    json_out: Annotated[bool, Opt("--json", help="Print the results as JSON on stdout and nothing else there.")] = False,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="Only the output paths.")] = False,
) -> None:
    """Time each collective from --min-bytes to --max-bytes: median, spread, algbw, busbw, correctness, alpha-beta fit."""
    from commprof.analysis.bench import BenchResult, fit_alpha_beta, summarize, write_bench
    from commprof.cli.sweep import parse_list
    from commprof.errors import CommprofError, UsageError
    from commprof.instrument.collectives import BENCH_OPS, DTYPES
    from commprof.launch.resolve import new_run_id
    from commprof.pipeline import prepare_report_dir

    backends = parse_list("--backend", backend, str)
    op_list = parse_list("--ops", ops, str)
    unknown = [o for o in op_list if o not in BENCH_OPS] + [b for b in backends if b not in ("gloo", "nccl", "mpi")]
    if unknown:
        raise UsageError(f"unknown op or backend: {', '.join(unknown)} (ops: {', '.join(BENCH_OPS)})")
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    low, high = parse_size("--min-bytes", min_bytes), parse_size("--max-bytes", max_bytes)
    for label, value, least in (("--factor", factor, 2), ("--warmup", warmup, 0), ("--iters", iters, 1),
                                ("--procs", procs, 2)):
        if value < least:
            raise UsageError(f"{label} must be >= {least}, got {value}")
    if low > high:
        raise UsageError("--min-bytes is larger than --max-bytes")
    report_name = name or f"bench-{new_run_id()}"
    folder = prepare_report_dir(reports_dir, report_name)
    plan = {"ops": op_list, "min_bytes": low, "max_bytes": high, "factor": factor, "dtype": dtype,
            "warmup": warmup, "iters": iters}
    buckets = _ddp_buckets(model, bucket_cap_mb) if model else []
    rows, unavailable, world = [], {}, procs
    for backend_name in backends:
        with console.err.status(f"bench: {backend_name} on {procs} ranks", spinner="dots") if not (quiet or json_out) else nullcontext():
            try:
                raw = _run_backend(backend_name, plan, procs, device, timeout)
            except CommprofError as exc:
                unavailable[backend_name] = str(exc)
                continue
        rows += summarize(backend_name, raw["world_size"], raw["rows"], buckets)
    result = BenchResult(report_name, world, rows, fit_alpha_beta(rows, world), unavailable, buckets)
    paths = write_bench(result, folder)
    if json_out:
        console.out.print(result.to_json(), markup=False, soft_wrap=True)
        return
    if not quiet:
        _show(result)
    console.out.print(f"bench: {paths['json']} (also bench.csv and busbw.png beside it)", markup=False)



def _run_backend(backend: str, plan: dict, procs: int, device: str, timeout: float) -> dict:
    import json

    from commprof.errors import RunFailed

    with tempfile.TemporaryDirectory(prefix="commprof-bench-") as tmp:
        out = Path(tmp) / "rows.json"
        plan = {**plan, "out": str(out)}
        if backend == "mpi":
            from commprof.launch.mpi import run_under_mpi

            plan_path = Path(tmp) / "plan.json"
            plan_path.write_text(json.dumps(plan))
            run_under_mpi(procs, "commprof.worker.bench", [str(plan_path)], timeout)
        else:
            _run_torch_backend(backend, plan, procs, device, timeout, Path(tmp))
        if not out.exists():
            raise RunFailed(f"{backend}: the benchmark wrote no results")
        return json.loads(out.read_text())


def _run_torch_backend(backend: str, plan: dict, procs: int, device: str, timeout: float, tmp: Path) -> None:
    from commprof.worker.bench import bench_main
    from commprof.launch.launcher import launch
    from commprof.launch.resolve import MachineProbe, RunRequest, resolve

    cuda = device == "cuda"
    request = RunRequest(device=device, backend=backend, procs=None if cuda else procs, gpus=procs if cuda else None,
                         traces_dir=tmp / "traces", reports_dir=tmp / "reports", timeout_s=timeout)
    config = resolve(request, MachineProbe.detect())
    launch(config, tmp / "progress.json", entrypoint=bench_main, payload={**plan, "run": config.to_dict()})


def _ddp_buckets(model: str, cap_mb: float) -> list[int]:
    """The bucket sizes DDP builds for this model (its own assignment function)."""
    import torch.distributed as dist

    from commprof.workloads import load_workload

    params = [p for p in load_workload(model, "small").model.parameters() if p.requires_grad][::-1]
    groups, _ = dist._compute_bucket_assignment_by_size(params, [int(cap_mb * 2**20)])
    return [sum(params[i].numel() * params[i].element_size() for i in group) for group in groups]


def _show(result) -> None:
    from rich import box
    from rich.table import Table

    from commprof.render.tables import human_bytes

    table = Table(title="Collectives (us; algbw/busbw GB/s; * = a size DDP uses for --model)", title_justify="left",
                  box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False)
    for header in ("backend", "op", "size", "median", "p10-p90", "algbw", "busbw", "ok"):
        table.add_column(header, justify="left" if header in ("backend", "op") else "right", no_wrap=True)
    for r in result.rows:
        table.add_row(r.backend, r.op, human_bytes(r.bytes) + (" *" if r.ddp_bucket else ""), f"{r.median_us:.1f}",
                      f"{r.p10_us:.0f}-{r.p90_us:.0f}", f"{r.algbw_gbps:.3f}", f"{r.busbw_gbps:.3f}",
                      "yes" if r.correct else "WRONG")
    console.out.print(table)
    fits = Table(title="Latency-bandwidth model t = alpha + size / bandwidth", title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("backend", "op", "alpha us", "bandwidth GB/s", "busbw GB/s"):
        fits.add_column(header, justify="left" if header in ("backend", "op") else "right")
    for f in result.fits:
        fits.add_row(f.backend, f.op, f"{f.alpha_us:.1f}", f"{f.bandwidth_gbps:.3f}", f"{f.busbw_gbps:.3f}")
    console.out.print(fits)
    for backend, reason in result.unavailable.items():
        console.out.print(f"{backend}: not measured: {reason}", markup=False)
