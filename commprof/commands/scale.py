"""`commprof scale`: the same workload at several world sizes, interleaved; then efficiency and predictions."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from commprof.analysis.predict import (
    LinkModel,
    StepProfile,
    fit_compute,
    fit_link,
    fit_transfers,
    parse_link,
    probed_transfers,
    rebucket,
    simulate_step,
    step_profile,
)
from commprof.analysis.ran_as import job_as_run, kind_ran, largest_by_collective
from commprof.analysis.scaling import SizeMeasurement, job_step_times, predict, scale_points
from commprof.commands.common import check_model, ddp_only, prepare_figures, training
from commprof.commands.outcome import SILENT, Feedback, Outcome
from commprof.commands.reporting import prepare_report_dir, report_and_trace, write_report
from commprof.commands.unfinished import failed_run
from commprof.config import RunConfig, RunRequest
from commprof.errors import RunFailed, UsageError
from commprof.kinds import KINDS
from commprof.launch.runlog import read_run_json
from commprof.launch.script_run import finish_script_run
from commprof.plans import DEFAULT_WORLD_SIZES, MEASURED_AS_SCALE_DOES, ScaleOptions
from commprof.render import progress_words
from commprof.results.finding_facts import LinkSource
from commprof.results.job import BuiltDDP
from commprof.results.report import Report
from commprof.results.run_record import RunRecord
from commprof.results.scale import ScaleReport

SCALE_RUNS = " on commprof's own model; a script that shards its model itself scales as it is: commprof scale -- SCRIPT"


def scale(
    request: RunRequest,
    world_sizes: list[int] | None,
    feedback: Feedback = SILENT,
    options: ScaleOptions = MEASURED_AS_SCALE_DOES,
    predict_sizes: list[int] | None = None,
    node_counts: list[int] | None = None,
) -> Outcome:
    """Every world size `repeats` times, interleaved; each run gets its own full report beside this one. With
    `node_counts`, the sizes are that many nodes of request.procs (or .gpus) ranks each: every node runs this same
    command, joins the launches that span it, and the node of rank 0 writes every report. A script (request.script)
    runs as written at each size (weak scaling: its own batch per rank); `batch_argument`, its argument that holds
    the per-rank batch, gives samples/s, and strong scaling that argument divided among the ranks."""
    strong, repeats, batch_argument = options.strong, options.repeats, options.batch_argument
    ddp_only(request, "scale", SCALE_RUNS)
    if request.script:
        from commprof.commands.run import check_script

        check_script(request)
    elif batch_argument is not None:
        raise UsageError("--batch-argument names a script's argument (commprof scale ... -- train.py ...)")
    from commprof.launch import forkserver
    from commprof.launch.resolve import MachineProbe, new_run_id, resolve, resolve_device, resolve_ranks
    from commprof.render.outputs import write_result

    counts, targets = _counts_asked(request, world_sizes, node_counts), sorted(set(predict_sizes or []))
    if counts[0] < 1 or (targets and targets[0] < 1):
        raise UsageError(f"{'--nodes' if node_counts else 'world sizes'} must be >= 1")
    if len(counts) < 2:
        what = "--nodes" if node_counts else "--world-sizes"
        raise UsageError(f"{what} needs at least two sizes to measure scaling, got {','.join(map(str, counts))!r}")
    link_model = parse_link(options.link) if options.link else None
    if targets and link_model is None and counts[-1] < 2:
        raise UsageError("--predict without --link needs a measured size >= 2 to fit the link")
    probe = MachineProbe.detect()
    device = resolve_device(request.device, request.gpus, probe)
    cuda = device == "cuda"
    per_node = resolve_ranks(request.procs, request.gpus, device, probe)
    nodes_of = {k * per_node: k for k in counts} if node_counts else {n: 1 for n in counts}
    sizes = sorted(nodes_of)
    name = request.run_id or new_run_id()
    configs, batches = {}, _per_rank_batches(request, sizes, strong, batch_argument)
    for n in sizes:
        node_ranks = n // nodes_of[n]
        sized = dataclasses.replace(
            request,
            run_id=f"{name}-ws{n}-r1",
            batch_size=batches[n] if not request.script else request.batch_size,
            script=_with_batch(request.script, batch_argument, batches[n]) if strong else request.script,
            gpus=node_ranks if cuda else request.gpus,
            procs=request.procs if cuda else node_ranks,
            nodes=nodes_of[n],
            rdzv_endpoint=request.rdzv_endpoint if nodes_of[n] > 1 else None,
        )
        configs[n] = resolve(sized, probe)
    forkserver.start_early(request)
    workload = None if request.script else check_model(configs[sizes[0]], feedback)
    folder = prepare_report_dir(request.reports_dir, name)
    plan = ScalePlan(
        name=name,
        configs=configs,
        repeats=repeats,
        strong=strong,
        base_lr=options.base_lr,
        predict_sizes=targets,
        link=link_model,
        per_rank_batch=batches,
        parameters=workload.parameter_count if workload else None,
        parameter_bytes=[p.numel() * p.element_size() for p in workload.model.parameters() if p.requires_grad]
        if workload
        else None,
        largest_first=node_counts is not None,
        batch_argument=batch_argument,
    )
    launches = NodeLaunches(feedback)
    report = run_scale(plan, launches.launch, request.reports_dir)
    if report is None:
        folder.rmdir()  # empty: the node of rank 0 writes the report
        return Outcome(None, note=progress_words.elsewhere(None))
    return Outcome(report, write_result(report, folder))


def _per_rank_batches(
    request: RunRequest, sizes: list[int], strong: bool, batch_argument: str | None
) -> dict[int, int]:
    """Each size's batch per rank: the same at every size (weak), or the smallest size's global batch divided
    (strong). A script's is the value of its `batch_argument`; 1 where not known (weak scaling: the throughput is then
    counted in optimizer steps of every rank, samples/s over the batch)."""
    batch = request.batch_size
    if request.script:
        if batch_argument is None:
            if strong:
                raise UsageError(
                    "--strong with a script needs --batch-argument NAME, the script's argument that holds its batch "
                    "per rank (e.g. --batch-argument --batch-size), which commprof divides among the ranks"
                )
            return {n: 1 for n in sizes}
        batch = _batch_of(request.script, batch_argument)
    per_rank = {}
    for n in sizes:
        total = batch * sizes[0]
        if strong and total % n:
            raise UsageError(f"--strong: the global batch {total} does not divide evenly over {n} ranks")
        per_rank[n] = total // n if strong else batch
    return per_rank


def _batch_of(script: tuple[str, ...], argument: str) -> int:
    """The value the script is given for `argument` (`--batch-size 16` or `--batch-size=16`)."""
    for i, word in enumerate(script):
        value = script[i + 1] if word == argument and i + 1 < len(script) else None
        value = word.split("=", 1)[1] if word.startswith(f"{argument}=") else value
        if value is not None:
            if not value.isdigit() or int(value) < 1:
                raise UsageError(f"--batch-argument {argument}: the script is given {value!r}, not a batch size")
            return int(value)
    raise UsageError(
        f"--batch-argument {argument}: the script's arguments ({' '.join(script[1:]) or 'none'}) do not give it; "
        f"give it after the script (-- {script[0]} {argument} 32)"
    )


def _with_batch(script: tuple[str, ...], argument: str | None, batch: int) -> tuple[str, ...]:
    """The script's arguments with `argument`'s value replaced by `batch`."""
    words = list(script)
    for i, word in enumerate(words):
        if word == argument and i + 1 < len(words):
            words[i + 1] = str(batch)
        elif argument and word.startswith(f"{argument}="):
            words[i] = f"{argument}={batch}"
    return tuple(words)


def _counts_asked(request: RunRequest, world_sizes: list[int] | None, node_counts: list[int] | None) -> list[int]:
    """The sizes asked, in order: ranks on this node (--world-sizes), or nodes of --procs/--gpus ranks each."""
    if node_counts is None:
        if (request.procs, request.gpus, request.rdzv_endpoint) != (None, None, None):
            raise UsageError(
                "--procs, --gpus and --rdzv-endpoint go with --nodes; --world-sizes gives each size's ranks"
            )
        return sorted(set(world_sizes or DEFAULT_WORLD_SIZES))
    if world_sizes is not None:
        raise UsageError("--nodes and --world-sizes are two ways to give the sizes: pass one")
    if max(node_counts) > 1 and request.rdzv_endpoint is None:
        raise UsageError("--nodes: pass --rdzv-endpoint HOST:PORT, node 0's address, the same on every node")
    if request.run_id is None:
        raise UsageError("--nodes: pass the same --run-id NAME on every node, so the nodes meet in each launch")
    return sorted(set(node_counts))


class NodeLaunches:
    """This node's part of a scale: the first launch spans every node and tells this node its rank among them;
    after it, the node joins only the launches on more nodes than its rank (a launch on k nodes runs on nodes
    0..k-1, which rendezvous orders as in the first)."""

    def __init__(self, feedback: Feedback):
        self.feedback = feedback
        self.node_rank: int | None = None

    def launch(self, config: RunConfig) -> Path | None:
        """The run's trace folder where this node has its rank 0; None where another node reports it."""
        from commprof.launch.job import run_job

        if self.node_rank is not None and config.nodes <= self.node_rank:
            return None
        self.feedback.info(progress_words.scale_launch(config.world_size, config.nodes, config.run_id))
        prepare_figures()
        steps = config.max_steps if config.script else config.steps
        try:
            launched = run_job(config, training(config), steps, self.feedback.watch)
        except RunFailed as failure:
            raise failed_run(failure, config) from None
        if config.script and launched.has_rank_zero:
            finish_script_run(launched.run_dir, config.launch_id)
        if self.node_rank is None:
            self.node_rank = min(launched.ranks_here) // config.procs_per_node
        return launched.run_dir if launched.has_rank_zero else None


@dataclass(frozen=True)
class ScalePlan:
    name: str
    configs: dict[int, RunConfig]  # world size -> the run at that size (run_id gets a repeat suffix)
    repeats: int
    strong: bool
    base_lr: float
    predict_sizes: list[int]
    link: LinkModel | None  # None: fitted to the measured all-reduces
    per_rank_batch: dict[int, int]  # world size -> batch per rank (1 for a script whose batch is not known)
    parameters: int | None  # None: a script's, from its first run
    parameter_bytes: list[int] | None  # per parameter, registration order (for re-bucketing); None: as parameters
    largest_first: bool = False  # across nodes: the first launch spans them all
    batch_argument: str | None = None  # a script's argument that holds its batch per rank

    def order(self) -> list[int]:
        """ABBA: sizes up, then down (or down, then up), so drift over time hits every size alike."""
        sizes = sorted(self.configs, reverse=self.largest_first)
        return [n for r in range(self.repeats) for n in (sizes if r % 2 == 0 else sizes[::-1])]


def run_scale(plan: ScalePlan, launch: Callable[[RunConfig], Path | None], reports_dir: Path) -> ScaleReport | None:
    """Launch every size in the interleaved order (`launch` gives the run's trace folder, or None where another
    node reports the run); each run also gets its own full report. None: this node reported no run."""
    measured: dict[int, list[SizeMeasurement]] = {}
    profiles: dict[int, list[StepProfile]] = {}
    runs, done = [], {n: 0 for n in plan.configs}
    first_run: RunRecord | None = None
    kinds: list[str] = []  # the kind each launch ran, where it showed one (FSDP's ranges need two ranks or more)
    probed: list[tuple[int, int, float]] = []  # every run's link probe: all-reduces timed alone
    for n in plan.order():
        done[n] += 1
        config = dataclasses.replace(plan.configs[n], run_id=f"{plan.name}-ws{n}-r{done[n]}")
        run_dir = launch(config)
        if run_dir is None:
            continue
        report, trace, timeline = report_and_trace(run_dir, name=config.run_id)
        write_report(report, reports_dir, config.run_id, timeline, run_dir)
        run = read_run_json(run_dir)
        measured.setdefault(n, []).append(_measurement(n, report, run, config))
        first_run = first_run or run
        kinds += [kind] if (kind := kind_ran(config, run, report.collectives)) else []
        if n >= 2:
            probed += probed_transfers(run.link_probe if run else [], n)
        profiles.setdefault(n, []).append(step_profile(trace))
        runs.append(config.run_id)
    if not measured:
        return None
    first = plan.configs[min(plan.configs)]
    assert first_run is not None  # a run was measured
    job = job_as_run(first, first_run, kinds[0] if kinds else None)
    ran = KINDS[job.strategy] if job.strategy else None
    built = first_run.job.first(BuiltDDP) if first_run.script else None
    parameter_bytes = plan.parameter_bytes or (built.parameter_sizes if built else [])
    points = [
        dataclasses.replace(p, nodes=plan.configs[p.world_size].nodes)
        for p in scale_points(measured, plan.per_rank_batch, plan.base_lr)
    ]
    scale = ScaleReport(
        name=plan.name,
        mode="strong" if plan.strong else "weak",
        model=job.model,
        parameters=plan.parameters or job.parameters,
        device=first.device,
        backend=first.backend,
        bucket_cap_mb=_bucket_cap(first, built) if ran is not None and ran.reads_ddp else None,
        strategy=job.strategy,
        settings=job.settings,
        script=list(first.script) or None,
        batch_argument=plan.batch_argument,
        base_learning_rate=plan.base_lr,
        points=points,
        runs=runs,
        order=plan.order(),
    )
    every = [p for ps in profiles.values() for p in ps]
    several = len(first_run.job.built) > 1  # the model re-buckets one DDP's parameters: not a GAN's two
    if (ran is not None and not ran.modelled) or several or (not any(n >= 2 for n in profiles) and plan.link is None):
        return scale  # the step model is one DDP's buckets: FSDP's, ZeRO's, Horovod's steps are not modelled
    link = plan.link or (
        fit_transfers(probed, LinkSource("timed", calls=len(probed))) if len(probed) >= 2 else fit_link(every)
    )
    compute = fit_compute(every)
    reference = _median_profile(profiles[max(profiles)])
    overhead = statistics.median(
        statistics.median(m.job_step_ms) / m.profiled_step_ms for ms in measured.values() for m in ms
    )
    buckets = rebucket(reference, None, None)
    points = [
        dataclasses.replace(
            p, predicted_step_ms=simulate_step(reference, compute, link, p.world_size, buckets)[0] * overhead
        )
        for p in points
    ]
    predictions = (
        predict(
            points,
            reference,
            compute,
            link,
            plan.predict_sizes,
            first.batch_size,
            plan.strong,
            plan.base_lr,
            overhead,
            parameter_bytes,
        )
        if plan.predict_sizes
        else []
    )
    return dataclasses.replace(
        scale,
        points=points,
        predictions=predictions,
        link=dataclasses.asdict(link),
        compute=dataclasses.asdict(compute),
        profiling_overhead=overhead,
    )


def _bucket_cap(config: RunConfig, built: BuiltDDP | None) -> float | None:
    """The run's bucket_cap_mb: a built-in model's option; what a script's DDP got (None: DDP's default)."""
    if not config.script:
        return config.ddp.bucket_cap_mb
    cap = (built.applied.get("bucket_cap_mb", built.asked.get("bucket_cap_mb"))) if built else None
    return float(cap) if cap is not None else None


def _measurement(n: int, report: Report, run: RunRecord | None, config: RunConfig) -> SizeMeasurement:
    if run is None:
        raise UsageError(f"{config.run_dir}: no run.json; cannot measure world size {n}")
    mean = lambda attr: statistics.fmean(getattr(r, attr) for r in report.ranks)  # noqa: E731
    largest = largest_by_collective(report.collectives) if n > 1 else []  # a single rank's moves no bytes
    reduce = next((b.busbw_gbps for b in largest if b.collective == "all_reduce"), None)
    return SizeMeasurement(
        world_size=n,
        job_step_ms=job_step_times(run),
        profiled_step_ms=statistics.median(r.step_time_ms.median for r in report.ranks),
        compute_ms=mean("compute_ms"),
        exposed_comm_ms=mean("exposed_comm_ms"),
        idle_ms=mean("idle_ms"),
        allreduce_busbw_gbps=reduce,
        busbw=largest,
    )


def _median_profile(profiles: list[StepProfile]) -> StepProfile:
    ordered = sorted(profiles, key=lambda p: p.step_ms)
    return ordered[len(ordered) // 2]
