"""A user's script's run.json completed after every rank ended, from the ranks' step logs (the ranks of a script share
no process group of commprof's to gather them with): what the script built, the steps every rank did, and where the
ranks' collectives parted without the backend noticing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from commprof.launch.atomic import now
from commprof.launch.runlog import read_run_json, started_by, write_run_json
from commprof.launch.step_log import read_step_logs
from commprof.results.failure_facts import Parting
from commprof.results.run_record import Compiled, RankRecord, ScriptRankInfo


def finish_script_run(run_dir: Path, launch_id: str) -> None:
    """After every rank of a user's script ended: run.json, completed from the ranks' step logs (the ranks of a
    script share no process group of commprof's to gather them with). Only the launch that started the run."""
    record = read_run_json(run_dir)
    if record is None or not started_by(run_dir, launch_id):
        return
    logs = read_step_logs(run_dir)
    infos = {rank: ScriptRankInfo.from_dict(log.get("info") or {}) for rank, log in logs.items()}
    first = infos.get(0, ScriptRankInfo())
    measured = first.job.measured
    record = replace(
        record,
        status="complete",
        end_time=now(),
        hosts=sorted({log["host"] for log in logs.values()}),
        # the job's steps every rank took part in: a rank's steps shadowed under Join (its inputs ran out) count
        steps_completed=min((log["steps_done"] + infos[r].joined_steps for r, log in logs.items()), default=0),
        model=measured.module if measured else None,  # Horovod's: its optimizer, which knows no module
        parameters=measured.parameters if measured else None,
        tf32=first.tf32,
        job=first.job,
        compiled=compiled_by_every_rank(infos),
        optimizer=first.optimizer,
        notes=first.notes,
        script_notes=first.script_notes,
        desync=desync(infos),
        link_probe=first.link_probe,
        link_tiers=first.link_tiers,
        cast_costs=first.cast_costs,
        ranks=[
            RankRecord(
                rank=rank,
                host=log["host"],
                device=infos[rank].device,
                trace=infos[rank].trace,
                step_ms=log["step_ms"],
                ddp=infos[rank].ddp,
                peak_memory_mb=infos[rank].peak_memory_mb,
                joined_steps=infos[rank].joined_steps,
            )
            for rank, log in sorted(logs.items())
        ],
    )
    write_run_json(run_dir, record)


def compiled_by_every_rank(infos: dict[int, ScriptRankInfo]) -> Compiled | None:
    """Rank 0's torch.compile, with the steps in which any rank compiled: the others wait for a rank compiling."""
    first = infos.get(0, ScriptRankInfo()).compiled
    if first is None:
        return None
    steps = sorted({step for info in infos.values() if info.compiled for step in info.compiled.steps})
    return replace(first, steps=steps)


def desync(infos: dict[int, ScriptRankInfo]) -> Parting | None:
    """Where the ranks' collectives parted without the backend noticing (results/sequences.py)."""
    from commprof.launch.hang_evidence import where_they_part
    from commprof.results.sequences import first_parting

    return where_they_part(first_parting({rank: info.collectives for rank, info in infos.items()}), lines_known=False)
