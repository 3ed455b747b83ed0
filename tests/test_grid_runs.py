"""Issue 70's grid, replayed in-process from runs recorded by commprof (benchmarks/generate/record_runs.py), each
with a truth known from its script:
- tests/data/pipeline-dp/: a 2-stage GPipe pipeline (4 micro-batches) over "pp" times 2-way data parallelism over
  "dp" on 4 ranks; each step, each rank sends or receives 4 activations and 4 gradients over its stage pair and
  all-reduces its stage's 4 parameter tensors over its replica pair;
- tests/data/subgroups-late/: two DDP replicas over {0, 1} and {2, 3}, rank 3's backward 30 ms longer each step:
  rank 2 waits for it, ranks 0 and 1 wait for no one."""

import statistics

import pytest

from commprof.analysis.whole_run import lateness_ledger
from commprof.commands.reporting import report_from_traces
from commprof.config import ProfileSchedule
from commprof.results.step_ledger import read_ledgers
from commprof.trace.rules import PP_ACTIVATIONS, PP_GRADIENTS
from tests.conftest import REPO

DATA = REPO / "tests" / "data"
STAGE_PAIRS, REPLICA_PAIRS = [[0, 2], [1, 3]], [[0, 1], [2, 3]]
SLEEP_MS = 30.0  # train_ddp_subgroups.py's delay on its late rank


@pytest.fixture(scope="module")
def pipeline():
    return report_from_traces([DATA / "pipeline-dp"], "pipeline", "analysis", workers=1)[0]


@pytest.fixture(scope="module")
def late():
    return report_from_traces([DATA / "subgroups-late"], "late", "analysis", workers=1)[0]


def test_a_pipelines_stages_and_replicas_are_each_a_dimension_with_their_own_groups(pipeline):
    dims = {d.dimension: (d.groups, d.calls_per_step) for d in pipeline.dimensions}
    assert dims == {"pp": (STAGE_PAIRS, 8.0), "dp": (REPLICA_PAIRS, 4.0)}
    whole = {d.dimension: (d.groups, round(d.calls_per_step)) for d in pipeline.whole_run.dimensions}
    assert whole == {"pp": (STAGE_PAIRS, 8), "dp": (REPLICA_PAIRS, 4)}  # every step, as in the window


def test_a_pipelines_sends_and_receives_are_its_activations_and_their_gradients(pipeline):
    per_step: dict[str | None, float] = {}
    for row in pipeline.collectives:
        if row.op == "send_recv":
            assert row.group == "pp" and row.group_ranks == STAGE_PAIRS
            per_step[row.purpose] = per_step.get(row.purpose, 0.0) + row.calls_per_step
    assert per_step == {PP_ACTIVATIONS: 4.0, PP_GRADIENTS: 4.0}  # 4 micro-batches each way


def test_each_stage_is_told_with_its_wait_for_its_neighbours(pipeline):
    stages = {s.stage: s.ranks for s in pipeline.pipeline}
    assert stages == {0: [0, 1], 1: [2, 3]}
    assert all(0 < s.wait_ms < s.step_ms for s in pipeline.pipeline)
    dims = {d.dimension: d for d in pipeline.dimensions}
    for stage in pipeline.pipeline:  # the mean of its ranks' exposed time in their stage pair
        expected = statistics.fmean(dims["pp"].rank_exposed_ms[str(r)] for r in stage.ranks)
        assert stage.wait_ms == pytest.approx(expected)


def test_a_rank_late_in_its_own_group_is_named_there_and_the_other_group_is_not_blamed(late):
    (straggler,) = [f.facts for f in late.findings if f.kind == "straggler"]
    assert (straggler.rank, straggler.group, straggler.group_ranks) == (3, "replica_b", [2, 3])
    waits = {r.rank: r.wait_ms for r in late.cross_rank.ranks}
    assert SLEEP_MS * 0.8 < waits[2] < SLEEP_MS * 1.3  # rank 2 waits for rank 3's delay
    assert waits[0] < 5 and waits[1] < 5 and waits[3] < 5


def test_the_whole_run_weighs_each_step_within_each_group(late):
    ledgers = read_ledgers(DATA / "subgroups-late")
    waits = lateness_ledger(ledgers, ProfileSchedule(wait=3, warmup=1, active=3)).waits
    cost = {rank: statistics.median(by_step.values()) for rank, by_step in waits.items()}
    assert SLEEP_MS * 0.8 < cost[3] < SLEEP_MS * 1.3
    assert cost[0] < 2 and cost[1] < 2 and cost[2] < 2
