"""Everything commprof does around one rank of a user's script (worker/script.py runs it): the hooks installed before
it runs, each step's end, the profiler's window, and once it returned what the rank learned, its step log and
commprof's own measurements (worker/script_end.py)."""

from __future__ import annotations

import dataclasses
import faulthandler
import os
import signal
import socket
import time
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist

from commprof.config import RunConfig
from commprof.errors import what_went_wrong
from commprof.instrument.cast_probe import probe_casts, typical_bucket_bytes
from commprof.instrument.compiled import CompileWatch
from commprof.instrument.ddp import DDPOverrides
from commprof.instrument.deepspeed import DeepSpeedWatch
from commprof.instrument.forced_backend import ForcedBackend
from commprof.instrument.fsdp_script import FSDPOverrides
from commprof.instrument.hang_watch import HangWatch, flight_recorder_collectives, run_sequences
from commprof.instrument.horovod import TIMELINE_FILE, HorovodWatch, rank_environment
from commprof.instrument.join import JoinWatch
from commprof.instrument.link_probe import probe_link, probe_tiers
from commprof.instrument.optimizer_steps import on_step_return
from commprof.instrument.profiler import StartupProfile, make_profiler, release, trace_path, written
from commprof.kinds import DEEPSPEED, HOROVOD, KINDS
from commprof.launch.atomic import now
from commprof.launch.progress import Every, Progress, write_progress
from commprof.launch.runlog import write_run_json
from commprof.launch.step_log import StepLog, steps_kept
from commprof.results.hang import EnteredCollective
from commprof.results.job import Job
from commprof.results.run_record import (
    CastCost,
    ProbedSize,
    ProbedTier,
    RunRecord,
    ScriptNotes,
    ScriptRankInfo,
    Skipped,
)
from commprof.results.sequences import GroupSequence
from commprof.worker.rank import (
    device_name,
    gather_digests,
    gpu_index,
    peak_memory_mb,
    raise_stopped,
    tf32_settings,
    versions,
)
from commprof.worker.script_end import ScriptEnd, own_group
from commprof.worker.step_ledger import StepLedger
from commprof.worker.torch_settings import bound_default_timeouts, configure_rank


class MaxStepsReached(BaseException):
    """--max-steps optimizer steps are done: unwinds the script (a BaseException, so `except Exception` in it
    does not catch it)."""


class ScriptSession:
    """Everything commprof does around one rank of the user's script."""

    def __init__(self, config: RunConfig, progress_path: Path):
        self.link_probe: list[ProbedSize] = []  # all-reduces timed alone after the script (instrument/link_probe)
        self.link_tiers: list[ProbedTier] = []  # the same by tier, on a job over several hosts (rank 0's)
        self.cast_costs: list[CastCost] = []  # what compressing a gradient costs here (instrument/cast_probe)
        self.collectives: list[GroupSequence] = []  # the run's, from the Flight Recorder, once the script ended
        self.config, self.progress_path = config, progress_path
        self.rank, self.local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.host = socket.gethostname()
        self.use_cuda = config.device == "cuda"
        self.device = (
            torch.device("cuda", gpu_index(self.local_rank, torch.cuda.device_count()))
            if self.use_cuda
            else torch.device("cpu")
        )
        self.log = StepLog(config.run_dir, self.rank, self.host, steps_kept(config.schedule))
        self.due = Every()
        self.counted: str | None = None  # the optimizer whose steps are steps
        self.counted_id: int | None = None
        self.others: set[str] = set()
        self.saw_distributed = False  # torch.distributed initialized at some step
        self.script_backend: str | None = None  # its default group's backend, as a step saw it
        self.ddp = DDPOverrides(config.ddp, config.ddp_forced)
        self.fsdp = FSDPOverrides(config.fsdp if config.fsdp is config.options else None)
        # its engine's steps are the steps, where there is one; ZeRO's options set in its config (--strategy deepspeed)
        self.deepspeed = DeepSpeedWatch(self._engine_stepped, config.deepspeed.zero_config())
        self.compile = CompileWatch()
        self.join = JoinWatch()
        self.horovod = HorovodWatch(config.horovod.environment())
        # keys shared by every node's ranks (launch_id is each node's own): the run's id, the same on every node, in
        # the store of this launch alone
        self.store_prefix = f"commprof/{config.run_id}"
        self.end = ScriptEnd(self.store_prefix, self.rank, self.world, _latest_collectives)
        self.skipped: Skipped | None = None  # why commprof's own measurements were not made
        self.written: ScriptRankInfo | None = None  # what finish() wrote
        self.communicated = True  # False: a job of several ranks whose script never initialized torch.distributed
        self.backend = ForcedBackend(config.backend) if config.backend_given else None
        window = config.schedule.profiled_steps if config.profiled else None
        self.ledger = (
            StepLedger(config.run_dir, self.rank, self.host, self.use_cuda, window) if config.whole_run else None
        )
        if self.ledger is not None:
            self.ddp.timing = self.ledger
        self.last = time.perf_counter()
        idle = self._write_progress if self.local_rank == 0 else None  # the step it really finished, once it stops
        self.hang_watch = HangWatch.from_environment(self.rank, config.timeout_s, idle)
        if self.hang_watch is not None:
            self.hang_watch.tick = self.end.while_stalled
        self.profiler: torch.profiler.profile | None = None  # the scheduled one, from the first optimizer step on
        self.startup: StartupProfile | None = None  # the script's start, until its first optimizer step
        self._unhook: Callable[[], None] | None = None

    def start(self) -> None:
        self.config.run_dir.mkdir(parents=True, exist_ok=True)  # on every node: traces/ may be node-local
        if self.rank == 0:
            write_run_json(
                self.config.run_dir,
                RunRecord(
                    run_id=self.config.run_id,
                    config=self.config,
                    versions=versions(),
                    world_size=self.world,
                    hosts=[self.host],
                    start_time=now(),
                    script=list(self.config.script),
                ),
            )
        configure_rank(self.device, self.config.tf32)
        bound_default_timeouts(self.config.timeout_s)
        if self.hang_watch is not None:
            self.hang_watch.start()
        self.ddp.install()
        self.join.install()
        if self.ledger is not None:
            self.ledger.clock.install()
        self.fsdp.install()
        self.deepspeed.install()
        if self.config.horovod_rendezvous:  # what horovodrun would have set, before the script's hvd.init()
            timeline = str(self.config.run_dir / TIMELINE_FILE)
            os.environ.update(rank_environment(self.config.horovod_rendezvous, self.config.horovod, timeline))
            self.horovod.install()
        self.compile.install()
        if self.backend is not None:
            self.backend.install()
        self._unhook = on_step_return(self._after_step)  # the step ends where the optimizer's step() returns
        if self.config.profiled:
            # until the first optimizer step, the whole start: the trace of a script that never steps
            # (with shapes until the script first swaps a tensor: to_empty of a model built on meta, FSDP2's)
            self.startup = StartupProfile(self.use_cuda, self.config.run_dir, self.rank)
            self.startup.start()
            if self.config.schedule.wait == 0:  # the first step profiled: it begins with the model's first forward
                self.ddp.on_first_forward = self._start_at_first_forward
        signal.signal(
            signal.SIGTERM, raise_stopped
        )  # a stopped rank unwinds and writes its trace (the script may override)
        faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)  # where it was, even inside C++

    def _after_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.deepspeed.engine is not None:  # inside its engine's step, which goes on after it: the engine counts
            return
        if self.join.joining:  # Join's shadow of the others' steps, its inputs run out: not a step of its own
            self.join.joined_steps += 1
            return
        if self.counted_id is None:
            self.counted_id, self.counted = id(optimizer), self.ddp.optimizer_name(optimizer)
        elif id(optimizer) != self.counted_id:
            self.others.add(self.ddp.optimizer_name(optimizer))
            return
        self._step_ended()

    def script_succeeded(self) -> None:
        """The script returned on this rank: its collectives' record read; Horovod's timeline closed (the script may
        have stopped before its own shutdown); whether its ranks communicated, and over which backend."""
        if self.world > 1:  # before finish() writes what the rank learned
            self.collectives = run_sequences()
        horovod = bool(self.horovod.built) or self.horovod.running()
        self.horovod.shutdown()
        self.communicated = self.world < 2 or self.saw_distributed or bool(self.ddp.built) or dist.is_initialized()
        self.communicated = self.communicated or horovod  # Horovod's own collectives, over no torch.distributed group
        if dist.is_initialized():
            self.script_backend = default_backend(self.use_cuda)
        elif self.script_backend is None and (horovod or self.ddp.built):  # it never stepped, or destroyed its group
            self.script_backend = "horovod" if horovod else self.config.backend

    def script_returned(self) -> bool:
        """The script returned on this rank: its process group destroyed (as its exit
        would have), every rank awaited. True when every rank's script returned: commprof's own measurements are due."""
        if self.hang_watch is not None:
            self.hang_watch.script_returned()
        if dist.is_initialized():
            dist.destroy_process_group()
        if self.end.returned(self.log.steps_done):
            return True
        self.skipped = Skipped(self.end.left_because or "")
        return False

    def measure(self) -> None:
        """Every rank's script returned: in a process group of commprof's own, the link probe and the casts' cost
        (where the script's backend was Gloo or NCCL) and the traces' digests; any failure there is a note."""
        prefix = f"{self.store_prefix}/group"
        try:
            with own_group(prefix, self.rank, self.world, self.use_cuda):
                if self.script_backend in ("gloo", "nccl", "horovod"):
                    self.link_probe = probe_link(self.device)
                    self.link_tiers = probe_tiers(self.device)
                    self.cast_costs = probe_casts(self.device, self.bucket_bytes())
                gather_digests(self.config.run_dir, self.rank, self.world)
        except (RuntimeError, OSError, ValueError) as exc:
            self.skipped = Skipped(what_went_wrong(str(exc)), failed=True)
        self.write_measured()

    def _engine_stepped(self) -> None:
        self.counted = "DeepSpeedEngine"
        self._step_ended()

    def _step_ended(self) -> None:
        step_ms = (time.perf_counter() - self.last) * 1e3  # one time for the step log and the whole-run record
        if self.ledger is not None:
            self.ledger.step_ended(step_ms)
        try:
            self._count_step(step_ms)
        finally:  # commprof's own work after the step (its trace written, its logs) is in no step's time
            if self.ledger is not None:
                self.ledger.step_started()
            self.last = time.perf_counter()

    def _count_step(self, step_ms: float) -> None:
        if not self.saw_distributed and dist.is_initialized():
            self.saw_distributed, self.script_backend = True, default_backend(self.use_cuda)
        if self.hang_watch is not None:
            self.hang_watch.stepped()
        self.log.add(step_ms)
        self.compile.step_ended(self.log.steps_done)
        if self.startup is not None:
            self._start_scheduled_profiler()
        elif self.profiler is not None:
            self.profiler.step()
            if self.log.steps_done >= self.config.schedule.total:
                self._stop_profiler()
        if self.config.max_steps is not None and self.log.steps_done >= self.config.max_steps:
            raise MaxStepsReached  # the step log is written when the script ends (finish)
        if not self.due():
            return
        started = time.perf_counter()
        self.log.write()
        self._write_progress(self.config.max_steps)
        self.due.took(time.perf_counter() - started)

    def _write_progress(self, total: int | None = None) -> None:
        """On each node's first rank: the steps so far, of `total` (None: --max-steps, or the script's own loop)."""
        if self.local_rank == 0:
            done, total = self.log.steps_done, total if total is not None else self.config.max_steps
            phase = self.config.schedule.phase(done) if self.config.profiled else "training"
            progress = Progress(done, total, self.log.last_ms, phase, self.rank, self.host)
            write_progress(self.progress_path, progress)

    def _start_scheduled_profiler(self) -> None:
        """At the first optimizer step: the start-up recording is dropped, the schedule's profiler begins. It
        counts from the second step on, so one step less of waiting keeps the window where the schedule says."""
        startup, self.startup = self.startup, None
        assert startup is not None  # called only while it records
        release(startup.stop())
        schedule = self.config.schedule
        self.profiler = make_profiler(
            dataclasses.replace(schedule, wait=max(0, schedule.wait - 1)), self.use_cuda, self.config.run_dir, self.rank
        )
        self.profiler.start()

    def _start_at_first_forward(self) -> None:
        """With no step to wait: the schedule's profiler from the first DDP forward on, so that the first optimizer
        step is ProfilerStep#0 (without the script's start-up before it)."""
        if self.startup is None or self.log.steps_done:  # the counted optimizer stepped before any DDP forward
            return
        startup, self.startup = self.startup, None
        release(startup.stop())
        self.profiler = make_profiler(self.config.schedule, self.use_cuda, self.config.run_dir, self.rank)
        self.profiler.start()

    def _stop_profiler(self) -> None:
        if self.profiler is not None:
            profiler, self.profiler = self.profiler, None
            profiler.stop()  # writes the window it was recording, if any
            release(profiler)  # a swap after the window finds no weak reference of its records

    def finish(self, ended: bool = True) -> None:
        """Trace, step log with what this rank learned, hooks removed; the progress's last state: the steps run,
        of as many when the script `ended` (it stopped at --max-steps, or its own loop did), else of those asked
        for. Progress is written at most every quarter second: without this, the last steps would be missing."""
        self._write_progress(self.log.steps_done if ended else self.config.max_steps)
        if self.startup is not None:  # no optimizer step at all: the whole run is the one window
            startup, self.startup = self.startup, None
            profile = startup.stop()
            written(profile, self.config.run_dir, self.rank)  # with its record of each collective's group
            release(profile)
        self._stop_profiler()
        if self.ledger is not None:
            self.ledger.clock.uninstall()
            self.ledger.finish()
        if self._unhook is not None:
            self._unhook()
        self.ddp.uninstall()
        self.join.uninstall()
        self.fsdp.uninstall()
        self.compile.uninstall()
        if self.backend is not None:
            self.backend.uninstall()
        self.written = self.info()
        self.log.write(self.written)

    def write_measured(self) -> None:
        """The step log again, with commprof's measurements after the script (or why they are missing): what the
        rank learned of its script is the one finish() wrote, while its DDP and process group were still there."""
        if self.written is not None:
            noted = self.written.script_notes or ScriptNotes()
            self.log.write(
                dataclasses.replace(
                    self.written,
                    link_probe=self.link_probe,
                    link_tiers=self.link_tiers,
                    cast_costs=self.cast_costs,
                    script_notes=dataclasses.replace(noted, skipped=self.skipped),
                )
            )

    def bucket_bytes(self) -> int:
        """The script's typical full bucket: its first DDP's cap (asked for or applied) against its gradients."""
        built = self.ddp.built[0] if self.ddp.built else None
        cap = (built.applied.get("bucket_cap_mb") or built.asked.get("bucket_cap_mb")) if built else None
        gradients = sum(built.parameter_sizes) if built and built.parameter_sizes else None
        return typical_bucket_bytes(float(cap) if cap is not None else None, gradients)

    def job(self) -> Job:
        """What the script built so far, of every kind."""
        return Job([*self.ddp.built, *self.fsdp.built(), *self.deepspeed.built, *self.horovod.built])

    def notes(self) -> ScriptNotes:
        """What the report notes of the script, as facts (render/notes_text.py says them)."""
        job, chosen = self.job(), KINDS[self.config.strategy]
        forced = self.backend is not None and self.backend.asked not in (None, self.backend.backend)  # --backend
        notes = ScriptNotes(
            stepped=self.counted is not None,
            counted=self.counted,
            others=sorted(self.others),
            unused=self.config.strategy if chosen.built_of(job) is None else None,
            ddp_given=bool(self.ddp.options or self.ddp.comm_hook),
            backend_asked=self.backend.asked if forced and self.backend is not None else None,
            backend_given=self.backend.backend if forced and self.backend is not None else None,
            communicated=self.communicated,
            skipped=self.skipped,
        )
        built = [b.name for b in self.ddp.built]
        if self.horovod.built and chosen is not HOROVOD:  # another kind than DDP: the first that applies
            return dataclasses.replace(notes, horovod=True)
        if self.deepspeed.built and not self.ddp.built and chosen is not DEEPSPEED:
            return dataclasses.replace(notes, deepspeed_stage=self.deepspeed.built[0].zero_stage)
        if not self.ddp.built and notes.ddp_given:
            return dataclasses.replace(notes, no_ddp=True)
        if self.ddp.target is not None and self.ddp.target not in built:
            return dataclasses.replace(notes, ddp_target=self.ddp.target, ddp_built=built)
        return notes

    def info(self) -> ScriptRankInfo:
        trace = trace_path(self.config.run_dir, self.rank)
        return ScriptRankInfo(
            device=device_name(self.device),
            trace=trace.name if trace.exists() else None,
            link_probe=self.link_probe,
            link_tiers=self.link_tiers,
            cast_costs=self.cast_costs,
            collectives=self.collectives,
            ddp=self.ddp.logging_data(),
            job=self.job(),
            compiled=self.compile.record(),
            optimizer=self.counted,
            joined_steps=self.join.joined_steps,
            peak_memory_mb=peak_memory_mb(self.device),
            tf32=tf32_settings(),
            script_notes=self.notes(),
        )


def _latest_collectives() -> list[EnteredCollective]:
    return flight_recorder_collectives(stacks=False)


def default_backend(use_cuda: bool) -> str:
    """The backend of the script's default group on this rank's device: torch names a group made for several devices
    (init_device_mesh's) 'undefined', or by its config ('cpu:gloo'), so the config's entry for the device is read."""
    backend = str(dist.get_backend())
    if backend != "undefined" and ":" not in backend:
        return backend
    config = str(dist.get_backend_config())
    by_device = dict(part.split(":", 1) for part in config.split(",") if ":" in part)
    return by_device.get("cuda" if use_cuda else "cpu", backend)
