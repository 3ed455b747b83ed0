"""`commprof scale`: throughput, speedup and efficiency against world size; predictions beyond it."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from commprof.cli import console
from commprof.cli.options import with_run_options

Opt = typer.Option


@with_run_options(exclude=frozenset({"procs", "gpus", "nodes", "rdzv_endpoint"}))
def scale(
    request,
    quiet: bool,
    world_sizes: Annotated[str, Opt(help="World sizes to run, comma-separated: CPU ranks, or GPUs on this node.")] = "1,2,4",
    strong: Annotated[bool, Opt("--strong", help="Keep the global batch (--batch-size × the smallest size) fixed; "
                                "default: weak scaling, the same --batch-size per rank.")] = False,
    repeats: Annotated[int, Opt(help="Runs per size, interleaved (sizes up, then down).")] = 2,
    predict: Annotated[Optional[str], Opt(help="World sizes to predict, comma-separated, e.g. 16,32,64.")] = None,
    link: Annotated[Optional[str], Opt(help="Link for the prediction, e.g. 25GB/s,5us; default: fitted to the "
                                       "measured all-reduces.")] = None,
    base_lr: Annotated[float, Opt(help="Learning rate at the smallest size; larger sizes get the linear scaling rule.")] = 0.1,
) -> None:
    """Run the same workload at several world sizes: samples/s, speedup, scaling efficiency, where the step
    goes, and (with --predict) the step time, efficiency and best bucket_cap_mb at sizes not run."""
    import dataclasses

    from commprof.analysis.predict import parse_link
    from commprof.cli.common import check_model, launch_with_progress
    from commprof.cli.sweep import parse_list
    from commprof.errors import UsageError
    from commprof.launch.resolve import MachineProbe, new_run_id, resolve
    from commprof.pipeline import prepare_report_dir
    from commprof.pipeline_scale import ScalePlan, run_scale, write_scale

    sizes = sorted(set(parse_list("--world-sizes", world_sizes, int)))
    targets = sorted(set(parse_list("--predict", predict, int))) if predict else []
    if sizes[0] < 1 or (targets and targets[0] < 1):
        raise UsageError("world sizes must be >= 1")
    if len(sizes) < 2:
        raise UsageError(f"--world-sizes needs at least two sizes to measure scaling, got {world_sizes!r}")
    if repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {repeats}")
    link_model = parse_link(link) if link else None
    if targets and link_model is None and sizes[-1] < 2:
        raise UsageError("--predict without --link needs a measured size >= 2 to fit the link")
    name = request.run_id or new_run_id()
    probe = MachineProbe.detect()
    cuda = request.device == "cuda" or (request.device == "auto" and probe.cuda_available)
    configs = {}
    for n in sizes:
        per_rank = request.batch_size
        if strong:
            total = request.batch_size * sizes[0]
            if total % n:
                raise UsageError(f"--strong: the global batch {total} does not divide evenly over {n} ranks")
            per_rank = total // n
        sized = dataclasses.replace(request, run_id=f"{name}-ws{n}-r1", batch_size=per_rank,
                                    **({"gpus": n} if cuda else {"procs": n}))
        configs[n] = resolve(sized, probe)
    workload = check_model(configs[sizes[0]])
    folder = prepare_report_dir(request.reports_dir, name)
    plan = ScalePlan(name=name, configs=configs, repeats=repeats, strong=strong, base_lr=base_lr,
                     predict_sizes=targets, link=link_model, parameters=workload.parameter_count,
                     parameter_bytes=[p.numel() * p.element_size() for p in workload.model.parameters()
                                      if p.requires_grad])

    def launch(config):
        console.info(f"scale {name}: {config.world_size} rank(s), run {config.run_id}", quiet)
        return launch_with_progress(config, config.steps, quiet).run_dir

    report = run_scale(plan, launch, request.reports_dir)
    html = write_scale(report, folder)
    if console.json_mode():
        console.out.print(report.to_json(), markup=False)
        return
    if not quiet:
        from commprof.render.scale import render_markdown

        console.out.print(render_markdown(report), markup=False)
    console.out.print(f"scale: {html} (also report.json, report.md, scale.png; each run's report beside it)", markup=False)
