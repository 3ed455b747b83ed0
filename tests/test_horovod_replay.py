"""Horovod's fusion finding on a real run recorded by commprof (tests/data/horovod-fusion0/: every tensor its own
allreduce, 26 a step), analysed where Horovod is not installed (issue 54). The timeline's step numbers and step times
are checked against rank 0's own step log, a clock the timeline does not share; the finding against the values this
recording gave when it was made (docs/semantics.md, "Horovod")."""

import json
import statistics

import pytest

from commprof.analysis.horovod_findings import training_steps
from commprof.commands.reporting import report_from_traces
from commprof.trace.load import load_run
from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "horovod-fusion0"
TENSORS = 26  # train_horovod.py: 13 Linear layers, a weight and a bias each


@pytest.fixture(scope="module")
def analysed():
    """The report `commprof analyze` writes of the folder, and its traces as loaded (in this process)."""
    report, _ = report_from_traces([RUN], "h", "analysis", workers=1)
    return report, load_run([RUN], workers=1)


def test_each_training_step_holds_every_tensor_once_and_lasts_what_rank_0_timed(analysed):
    """Steps numbered from the timeline alone (a step ends where a tensor comes again): each of the replayed steps
    holds the 26 allreduces; from one step's first negotiation to the next step's is the step rank 0 timed (its
    optimizer step to the next: step n's calls serve optimizer step n + 1), to a median within 2% and every step within
    40% (the timeline's step runs from one negotiation to the next, the log's from one optimizer step's end)."""
    rank0 = next(r for r in analysed[1].ranks if r.rank == 0)
    steps, outside = training_steps(rank0)
    assert outside and len(steps) >= 30
    assert all(len(s.calls) == TENSORS for s in steps)
    own_ms = json.loads((RUN / "run.json").read_text())["ranks"][0]["step_ms"]
    ratios = [s.period_us / 1000 / own_ms[s.number + 1] for s in steps]
    assert statistics.median(ratios) == pytest.approx(1.0, abs=0.02)
    # step by step, not only in the median: one step off, the slow steps fall beside fast ones (ratios 0.12 to 4.8)
    assert all(0.6 < r < 1.4 for r in ratios), ratios


def test_the_finding_folds_the_26_calls_into_2_and_claims_the_replayed_gain(analysed):
    (fusion,) = [f for f in analysed[0].findings if f.kind == "horovod_fusion"]
    assert fusion.setting == {"fusion_threshold_mb": 8.0}
    assert (fusion.facts.calls_now, fusion.facts.calls_then, fusion.facts.threshold_bytes) == (26, 2, 8 * 2**20)
    assert fusion.gain_ms is not None
    assert (fusion.gain_ms.value, fusion.gain_ms.low) == pytest.approx((7.07, 5.58), abs=0.01)
