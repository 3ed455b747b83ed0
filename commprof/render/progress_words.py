"""The lines a command says while it works (sweep, tune, advise, compare, scale, bench): what it will launch, which
round it is in, what it measures again; and the plain lines a log gets while a launch or other work runs
(cli/progress_lines decides when a line is due and with which values). The commands give the facts, these choose the
words."""

from __future__ import annotations

from collections.abc import Sequence


def counted(labels: Sequence[str], more: str = "") -> str:
    """'3 settings (script-own, bucket-1mb, bucket-5mb)': the settings a header promises, each by its label."""
    return f"{len(labels)} {more}setting{'s' if len(labels) != 1 else ''} ({', '.join(labels)})"


def span(least: int, most: int) -> str:
    """'5 to 10', or '5' where the two are one."""
    return f"{least} to {most}" if most > least else str(least)


def script_sweep_plan(
    name: str,
    script: str,
    ranks: str,
    what: str,
    repeats: tuple[int, int],
    steps: tuple[int, int, int],
    baseline: str,
    rounds: str | None,
) -> str:
    """A script's sweep or tune: what each launch measures, how often, and how a winner is confirmed. `ranks`: '2
    cpu'; `steps`: the timed launch's steps, the untimed first of them, the profiled launch's."""
    timed, warmup, profiled = steps
    return (
        f"{name}: {script} on {ranks} rank(s); {what} x {span(*repeats)} interleaved repeats of one launch each "
        f"({timed} steps, the first {warmup} untimed; more than {repeats[0]} only while a setting against {baseline} "
        f"is undecided), then one profiled launch each ({profiled} steps)"
        + (f"; {rounds}" if rounds else "")
        + f"; a setting that beats {baseline} is measured against it again in {span(*repeats)} fresh pairs of "
        "launches before it is recommended"
    )


def sweep_plan(
    name: str,
    described: str,
    labels: Sequence[str],
    repeats: int,
    rounds: str | None,
    again: tuple[int, int] | None,
    baseline: str,
) -> str:
    """A built-in model's sweep or tune: its settings, repeats, and (one node) the launches that follow; `again`: the
    launches in all, at least and at most."""
    line = f"{name}: {described}; {counted(labels)} x {repeats} interleaved repeats"
    line += f"; one per bucket layout, {rounds}" if rounds else ""
    if again is None:
        return (
            line + "; one launch (across nodes its launches are not repeated: the intervals hold the noise between "
            "repeats, not between launches)"
        )
    return (
        line + f"; then the settings measured launched again, {span(*again)} launches in all, and a setting that beats "
        f"{baseline} measured against it again in fresh launches"
    )


def still_undecided(name: str, own: str, undecided: Sequence[str], unit: str, number: int, budget: int) -> str:
    """`tune r: still undecided against bucket-25mb: bucket-5mb; launch 4 of at most 8`; `unit`: launch, repeat."""
    return f"{name}: still undecided against {own}: {', '.join(undecided)}; {unit} {number} of at most {budget}"


def after_repeats(name: str, done: int, own: str, undecided: Sequence[str], budget: int) -> str:
    return (
        f"{name}: after {done} repeats, still undecided against {own}: {', '.join(undecided)}; repeat {done + 1} of at "
        f"most {budget}"
    )


def confirming(name: str, label: str, own: str, how: str) -> str:
    """`tune r: bucket-5mb beats bucket-25mb: measuring the two again in 5 fresh launches before recommending it`."""
    return f"{name}: {label} beats {own}: measuring the two again in {how} before recommending it"


def tuning_round(name: str, number: int, labels: Sequence[str]) -> str:
    return f"{name}: tuning round {number}, {counted(labels, 'more ')} around the best"


def one_per_layout(name: str, kept: Sequence[str], twins: Sequence[tuple[str, str, str]]) -> str:
    """The settings measured in a round, one per bucket layout; `twins`: (a setting, the one whose buckets it builds,
    the buckets) left out."""
    again = "; ".join(f"{twin} builds {kept_one}'s buckets ({buckets})" for twin, kept_one, buckets in twins)
    return f"{name}: {counted(kept)} in this round" + (f"; not measured again: {again}" if again else "")


def tune_instead(what: str, knob: str, strategy: str) -> str:
    return f"tune: {what}: tuning {knob} instead (as --strategy {strategy})"


def baseline_added(label: str) -> str:
    return f"added {label} as the baseline (the run options of a built-in model)"


def advise_plan(run_id: str, settings: int, source: str, baseline: str) -> str:
    return f"advise {run_id}: {settings} setting(s) from the findings of {source} against its own, {baseline}"


def compare_undecided(done: int, budget: int) -> str:
    return f"compare: the winner is undecided after {done} launches each: launch {done + 1} of {budget}"


def compare_launch(name: str, ranks: str, backend: str, what: str, launch: int | None, repeats: tuple[int, int]) -> str:
    """`compare: gloo (2 cpu ranks, gloo, ddp), launch 2 (3 to 6)`; `launch` None: one launch each."""
    of = f", launch {launch} ({repeats[0]} to {repeats[1]})" if launch is not None else ""
    return f"compare: {name} ({ranks} ranks, {backend}, {what}){of}"


def scale_launch(ranks: int, nodes: int, run_id: str) -> str:
    return f"scale: {ranks} rank(s) on {nodes} node(s), run {run_id}"


def elsewhere(ranks: Sequence[int] | None, what: str = "the report") -> str:
    """What a node that does not hold rank 0 did: its ranks (None: its ranks of each launch), and who writes `what`."""
    if ranks is None:
        return "this node ran its ranks of the launches that spanned it; the node of rank 0 reports"
    return f"ranks {', '.join(map(str, ranks))} done; the node with rank 0 writes {what}"


def traces_elsewhere(ranks: Sequence[int], run_dir: str) -> str:
    return (
        f"traces of ranks {', '.join(map(str, ranks))} written to {run_dir}/; the node that runs rank 0 writes the "
        "report"
    )


BENCH_ELSEWHERE = "this node ran ranks of the benchmark; the node of rank 0 writes it"


def duration(seconds: float) -> str:
    """`0:00:07`, `1:02:03`: hours, minutes, seconds, as Rich's time columns write them."""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def step_count(step: int, steps: int | None) -> str:
    """`12/20`, or `12` where the total is not known."""
    return f"{step}/{steps}" if steps is not None else str(step)


def starting(so_far_s: float | None = None) -> str:
    """A launch before rank 0 has written its first state; `so_far_s`: how long it has been starting, where said."""
    return "starting ranks" if so_far_s is None else f"starting ranks, {duration(so_far_s)} so far"


def at_step(rank: int, phase: str, step: int, steps: int | None, step_ms: float, eta_s: float | None = None) -> str:
    """`rank 0 training: step 12/20, 85.3 ms per step, ETA 0:00:07`: rank 0's latest state, and the time left where
    it is known; before a first step, no step time (there is none to give)."""
    if step == 0:
        return f"rank {rank} {phase}: no step done yet"
    text = f"rank {rank} {phase}: step {step_count(step, steps)}, {step_ms:.1f} ms per step"
    return text + (f", ETA {duration(eta_s)}" if eta_s is not None else "")


def stalled(
    rank: int,
    host: str | None,
    phase: str,
    step: int,
    steps: int | None,
    step_ms: float,
    still_s: float,
    where: str | None = None,
) -> str:
    """A rank that has finished no step for `still_s`: since which step (or since it started), and `where` the
    stalled ranks are, once they have written it."""
    who = f"rank {rank}" + (f" on {host}" if host else "")
    before = (
        f"since step {step_count(step, steps)} ({phase}, {step_ms:.1f} ms per step before)"
        if step
        else f"since it started ({phase})"
    )
    line = f"{who} has finished no step for {duration(still_s)}, {before}: it, or a rank it waits for, is stuck or slow"
    return line + (f"; {where}" if where else "")


def launch_ended(took_s: float, failed: bool, rank: int | None = None, step: int = 0, steps: int | None = None) -> str:
    """A launch's last line: `rank` None where rank 0 wrote no state; else the step it stopped at, or (done) the steps
    it ran of `steps`."""
    took = duration(took_s)
    if rank is None:
        return f"stopped before rank 0's first step, after {took}" if failed else f"done in {took}"
    if failed:
        return f"rank {rank} stopped at step {step_count(step, steps)}, after {took}"
    return f"rank {rank} done: {step_count(step, steps)} steps in {took}"


def work_so_far(description: str, so_far_s: float) -> str:
    """Work without steps, nothing counted yet: `analysing trace files, 0:00:10 so far`."""
    return f"{description}, {duration(so_far_s)} so far"


def work_count(description: str, done: int, total: int, per_s: float, eta_s: float | None = None) -> str:
    """`analysing trace files: 2/8, 0.1/s, ETA 0:01:00`."""
    return f"{description}: {done}/{total}, {per_s:.1f}/s" + (f", ETA {duration(eta_s)}" if eta_s is not None else "")


def work_ended(description: str, took_s: float, count: tuple[int, int] | None = None) -> str:
    """The last line of work without steps: the count done, where there was one."""
    said = f"{count[0]}/{count[1]}" if count is not None else "done"
    return f"{description}: {said} in {duration(took_s)}"
