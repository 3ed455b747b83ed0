"""torch.compile over DDP (issue 52, item 7), on hand-made records: the compile steps left out of the whole run's
figures and the profiler's cost (what the report says of the compile: test_render_model_words.py)."""

from commprof.analysis.distortion import job_step
from commprof.analysis.whole_run import lateness_ledger, whole_run
from commprof.results.run_record import Compiled
from commprof.results.step_ledger import Call, LedgerBuilder, StepEntry
from commprof.worker.step_ledger import HOST_CLOCK
from tests.conftest import run_record

COMPILED = Compiled(
    "Sequential", "inductor", None, [1, 2, 31], graphs=[[1_050_624, 7_354_368]], bucket_cap_bytes=26_214_400
)


def waits_of(ledgers, schedule, compiled=frozenset()):
    return lateness_ledger(ledgers, schedule, compiled).waits


def ledgers(compile_ms: dict[int, float]):
    """Two ranks, 60 steps of 20 ms (5 of them all-reduce); rank 0 compiles for `compile_ms[step]` in those steps,
    while rank 1 waits for it in its all-reduce."""
    built = {r: LedgerBuilder(r, "vm", HOST_CLOCK) for r in (0, 1)}
    for step in range(1, 61):
        late = compile_ms.get(step, 0.0)
        for rank, builder in built.items():
            wait = late if rank == 1 else 0.0
            call = Call("all_reduce", 1_000_000, 15.0 + (late if rank == 0 else 0.0), 5.0 + wait)
            builder.add(StepEntry.of(step, 20.0 + late + (step % 3 - 1) * 0.2, (call,)))
    return {r: b.ledger() for r, b in built.items()}


def test_compile_steps_are_left_out_of_the_whole_run_and_said_apart():
    records = ledgers({1: 9000.0, 2: 400.0, 31: 600.0})  # a recompile at step 31
    plain = whole_run(records, None)
    assert [s.step for s in plain.standouts] == [31]  # steps 1-3 are skipped anyway; the recompile stands out
    assert plain.slow_rank == 0
    assert max(waits_of(records, None)[0].values()) == 600.0  # and reads as rank 0 making rank 1 wait
    compiled = frozenset(COMPILED.steps)
    whole = whole_run(records, None, compiled)
    assert whole.standouts == [] and whole.slow_rank is None and whole.changes == []
    assert whole.compiled_steps == [1, 2, 31]
    assert whole.compiled_ms == 9020.0 + 420.2 + 620.0  # each the slowest rank's step (20 ms +- 0.2 and the compile)
    assert 31 not in waits_of(records, None, compiled)[0]


def test_compile_steps_are_left_out_of_the_profilers_cost():
    """Steps 6-15 profiled at 22 ms; the unprofiled steps after the profiler's reach, 17-21, at 20 ms but for three
    that recompiled for 2 s (a median moves only when most of its steps do)."""
    steps = [[20.0] * 5 + [22.0] * 10 + [20.0] * 3 + [2000.0] * 3]
    record = run_record((3, 2, 10), steps)
    assert job_step(record).unprofiled_ms == 2000.0
    compiled = run_record((3, 2, 10), steps, compiled=Compiled("m", "inductor", steps=[19, 20, 21]))
    assert job_step(compiled).unprofiled_ms == 20.0
