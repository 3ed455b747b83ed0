"""The report's notes in words, from its facts: what a run that did not complete covers (results/rank_facts.Unfinished),
the ranks with no trace here (Report.missing_ranks), the steps that launched no device work (Report.empty_steps), the
trace files skipped."""

from __future__ import annotations

import dataclasses

from commprof.kinds import KINDS
from commprof.render.failure_words import failure_text
from commprof.render.hang_words import hang_text
from commprof.render.kind_words import words_of
from commprof.results.common import Result
from commprof.results.failure_facts import Parting
from commprof.results.rank_facts import Unfinished
from commprof.results.report import Report
from commprof.results.run_record import ScriptNotes


def unfinished_text(unfinished: Unfinished | None) -> str:
    """'the run failed (...); 12 step(s) completed on every rank; this report covers steps 8-12, ...'."""
    if unfinished is None:
        return "the run completed"
    parts = [
        f"the run was {unfinished.error or 'interrupted'}"
        if unfinished.status == "interrupted"
        else f"the run failed ({_why_failed(unfinished)})",
        f"{unfinished.completed} step(s) completed on every rank; this report covers "
        + (
            f"steps {unfinished.covered[0]}-{unfinished.covered[1]}, the traced ones among them"
            if unfinished.covered
            else "no traced step of them"
        ),
    ]
    if unfinished.missing:
        parts.append(f"no trace from rank(s) {', '.join(map(str, unfinished.missing))}")
    if unfinished.emptied:
        parts.append(f"no completed traced step from rank(s) {', '.join(map(str, unfinished.emptied))}")
    return "; ".join(parts)


def _why_failed(unfinished: Unfinished) -> str:
    if unfinished.failure is not None:
        return failure_text(unfinished.failure)
    return unfinished.error or unfinished.status


def desync_text(parting: Parting) -> str:
    """Where the ranks' collectives parted with no error from the backend."""
    return (
        f"{hang_text(parting)}; the backend raised no error: what that collective returned is not what the script meant"
    )


def incomplete_text(report: Report) -> str | None:
    """Why the report covers only part of the run, or None; a report written before it held the facts: its words."""
    return unfinished_text(report.unfinished) if report.unfinished is not None else report.incomplete


def missing_text(missing: list[int], world: int) -> str:
    verb = "have" if len(missing) > 1 else "has"
    return (
        f"{len(missing)} of {world} ranks {verb} no trace here (rank{'s' if len(missing) > 1 else ''} "
        f"{rank_ranges(missing)}): every figure, across ranks too, covers the {world - len(missing)} present. "
        "Give every rank's traces for the whole job (with a node-local --traces-dir, copy each node's into "
        "one folder)"
    )


def rank_ranges(ranks: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    parts, start = [], None
    for i, rank in enumerate(ranks):
        if start is None:
            start = rank
        if i + 1 == len(ranks) or ranks[i + 1] != rank + 1:
            parts.append(str(start) if start == rank else f"{start}-{rank}")
            start = None
    return ", ".join(parts)


def notes(report: Report) -> list[str]:
    """The report's notes: the files skipped, the ranks missing, the steps without device work, and its warnings."""
    said = [f"skipped {s.path}: {s.reason}" for s in report.skipped]
    if report.missing_ranks:
        said.append(missing_text(report.missing_ranks, len(report.missing_ranks) + len(report.ranks)))
    said += [
        f"rank {rank}: {', '.join(steps)} launched no device work: not counted as steps"
        for rank, steps in report.empty_steps.items()
    ]
    said += report.warnings
    if report.run is not None and report.run.script_notes is not None:
        said += script_notes_text(report.run.script_notes)
    if report.run is not None and report.run.desync is not None:
        said.append(desync_text(report.run.desync))
    return said


def script_notes_text(notes: ScriptNotes) -> list[str]:
    """What a script's rank saw of it, in the report's notes."""
    said = []
    if not notes.stepped:
        said.append("the script made no optimizer step: its whole run is one window")
    if notes.others:
        said.append(f"steps counted are those of {notes.counted}; the script also stepped {', '.join(notes.others)}")
    unused = words_of(KINDS[notes.unused]).unused if notes.unused else ""
    if unused:
        said.append(unused)
    if notes.horovod:
        said.append(
            "the script trains with Horovod: its allreduces run in Horovod's background thread, out of the "
            "profiler's sight; they are read from Horovod's timeline, which its coordinator (rank 0) writes"
        )
    elif notes.deepspeed_stage is not None:
        given = ": the DDP options given had no effect" if notes.ddp_given else ""
        said.append(
            f"the script trains with DeepSpeed (ZeRO stage {notes.deepspeed_stage}), not DistributedDataParallel{given}"
        )
    elif notes.no_ddp:
        said.append("the script built no DistributedDataParallel: the DDP options given had no effect")
    elif notes.ddp_target is not None:
        said.append(
            f"the script built no DDP named {notes.ddp_target} (it built {', '.join(notes.ddp_built)}): the DDP "
            "options had no effect"
        )
    if notes.backend_asked:
        said.append(
            f"the script's init_process_group asked for {notes.backend_asked}; commprof gave it "
            f"{notes.backend_given} (--backend)"
        )
    if not notes.communicated:
        said.append(
            "the script never initialized torch.distributed (dist.init_process_group): its ranks did not "
            "communicate, so there is no communication to profile; each rank trained alone"
        )
    if notes.skipped is not None:
        how = "failed" if notes.skipped.failed else "were skipped"
        said.append(f"commprof's link probe and digests {how}: {notes.skipped.why}")
    return said


def with_incomplete_words(result: Result) -> Result:
    """A report that did not complete carries why in words too (`incomplete`), for report.json's readers."""
    if not isinstance(result, Report) or result.unfinished is None:
        return result
    return dataclasses.replace(result, incomplete=unfinished_text(result.unfinished))
