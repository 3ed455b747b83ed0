"""The words of the findings about ranks (input stalls, the straggler, a rank that stalls now and then), made from
their facts (results/rank_facts.InputStall, Straggler, Stalls; analysis/rank_findings.py decides them): a title, the
evidence and the line to act on (render/finding_words.py says every kind's)."""

from __future__ import annotations

from commprof.render.groups_view import ranks_text
from commprof.results.common import signed
from commprof.results.rank_facts import InputStall, Stalls, Straggler
from commprof.values import human_bytes

MAX_LISTED = 16  # ranks named in a finding's evidence
SHOWN_PART_MS = 0.5  # a rank waited for a core this much longer than the others: said
PARTS = {  # the parts of a step (analysis/rank_findings.PARTS), as the evidence names them
    "compute_ms": "compute",
    "start_idle_ms": "idle before its first operator (input pipeline)",
    "exposed_comm_ms": "exposed communication",
    "forward_idle_ms": "time in its forward outside any operator",
    "backward_idle_ms": "time in its backward outside any operator",
    "optimizer_idle_ms": "time in its optimizer step outside any operator",
}
INPUT_ACTION = "DataLoader(..., num_workers=4, pin_memory=True, persistent_workers=True, prefetch_factor=2)"


def input_stall_words(facts: InputStall) -> tuple[str, str, str]:
    stalled = facts.stalled
    shown = ", ".join(map(str, stalled[:MAX_LISTED])) + (
        f" and {len(stalled) - MAX_LISTED} more" if len(stalled) > MAX_LISTED else ""
    )
    return (
        f"the steps start idle on {len(stalled)} of {facts.ranks} ranks",
        f"rank {facts.rank} runs no operator for the first {facts.idle_ms:.1f} ms of each step: waiting for its next "
        f"batch, or Python between the steps (ranks idle at the start: {shown})",
        INPUT_ACTION,
    )


def straggler_words(facts: Straggler) -> tuple[str, str, str]:
    profiled, unprofiled = facts.profiled_steps, facts.unprofiled_steps
    over = f"{profiled} profiled steps"
    if unprofiled:
        over = f"{profiled + unprofiled} steps weighed ({profiled} profiled, {unprofiled} unprofiled)"
    late = f"{facts.late_steps} of {over}"
    if facts.bounded_ms is not None:
        late += f", bounded by its own extra time outside communication: {signed(facts.bounded_ms, '.1f')} ms a step"
    cause = ", ".join(f"{PARTS[part]} {signed(ms, '.1f')} ms" for part, ms in facts.excess.items())
    if facts.core_ms >= SHOWN_PART_MS:
        cause += (
            f"; it waited {facts.core_ms:.1f} ms a step longer than the others for a core (something else ran on its "
            "core in this launch), which is not counted: another launch places it elsewhere"
        )
    ops = ", ".join(f"{op} {ms:.1f}" for op, ms in facts.cost_by_op.items())
    return (
        _straggler_who(facts),
        f"in the profiled steps it makes the others wait {facts.cost_ms:.1f} ms per step in all ({ops}), late in "
        f"{late}; against the others' median, its {cause}",
        straggler_action(facts),
    )


def _straggler_who(facts: Straggler) -> str:
    """'rank 3 is the straggler: the others wait for it', or on a job of several groups, where it is late and who
    waits: 'rank 3 is the straggler of its tp group (ranks 2-3): rank 2 waits for it'."""
    if not facts.group:
        return f"rank {facts.rank} is the straggler: the others wait for it"
    others = [r for r in facts.group_ranks if r != facts.rank]
    who = f"rank {others[0]} waits" if len(others) == 1 else f"ranks {ranks_text(others)} wait"
    members = ranks_text(facts.group_ranks)
    return f"rank {facts.rank} is the straggler of its {facts.group} group (ranks {members}): {who} for it"


def straggler_action(facts: Straggler) -> str:
    """Where to look: the part of the step that is really larger on the straggler, and only hardware it ran on."""
    rank, part, gpu = facts.rank, facts.look_at, facts.gpu
    if not part:
        return (
            f"none of rank {rank}'s compute, input wait, communication or time between operators is larger than the "
            "others': it starts its collectives late from time the profiler does not place (the host's scheduler); "
            f"look at what else runs on its host{' and its GPU' if gpu else ''}"
        )
    where = {
        "compute_ms": (
            "its GPU's clocks and temperature (nvidia-smi -q -d CLOCK,PERFORMANCE), its data shard"
            if gpu
            else "what else runs on its host's cores (its CPU threads), its data shard"
        ),
        "start_idle_ms": "its DataLoader workers and storage",
        "exposed_comm_ms": "its network link and NIC" if gpu else "its network link",
        "forward_idle_ms": "the Python between its batch and its model's forward (logging, metrics, a sync)",
        "backward_idle_ms": "the hooks on its gradients and its autograd graph's Python",
        "optimizer_idle_ms": "the hooks on its optimizer's step (logging, an EMA of the weights, checkpoints)",
    }[part]
    phase = facts.phase
    in_phase = f" in its {'optimizer step' if phase == 'optimizer' else phase}" if phase else ""
    named = PARTS[part] + (in_phase if part == "compute_ms" else "")
    return f"look at rank {rank}'s {named} ({signed(facts.look_at_ms, '.1f')} ms per step against the others): {where}"


def stalls_words(facts: Stalls) -> tuple[str, str, str]:
    rank = facts.rank
    every = f", every {facts.every} steps" if facts.every else ""
    shown = ", ".join(str(step) for step in facts.steps[:8]) + (", ..." if len(facts.steps) > 8 else "")
    waited = ""
    if facts.waited_in:
        waited = f", the others waiting in {facts.waited_in} of {human_bytes(facts.waited_bytes)}"
    unseen = (
        f"; the profiled window, steps {facts.window[0]}-{facts.window[1]}, has none of them" if facts.window else ""
    )
    return (
        f"rank {rank} stalls now and then: the others wait for it",
        f"{len(facts.steps)} of the run's {facts.run_steps} steps took {facts.lost_ms:.0f} ms longer because of it "
        f"(steps {shown}{every}){waited}{unseen}; over the whole run it costs {facts.cost_ms:.1f} ms per step",
        f"look at what rank {rank} does at those steps: a checkpoint, logging or evaluation on that rank alone, a slow "
        "shard of its data, garbage collection; move it off the step or onto every rank at once",
    )
