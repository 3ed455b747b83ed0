"""commprof's per-step breakdown agrees with torch-tb-profiler's Distributed view (its own parser)."""

import pytest
from torch_tb_profiler.profiler.data import RunProfileData

from commprof.analysis.breakdown import breakdown_step, step_windows
from commprof.trace.load import load_run

pytestmark = pytest.mark.slow
TOLERANCE = 0.02  # of the step window


def test_every_step_of_every_rank_matches_the_plugin(cpu_run, tmp_path):
    cwd, _ = cpu_run
    run = load_run([cwd / "traces" / "e2e"])
    compared = 0
    for rank in run.ranks:
        plugin = RunProfileData.parse(f"rank{rank.rank}", None, rank.path, str(tmp_path))
        ours = {step.name.removeprefix("ProfilerStep#"): breakdown_step(rank, step) for step in step_windows(rank)}
        assert sorted(plugin.steps_names) == sorted(ours)
        for name, costs in zip(plugin.steps_names, plugin.comm_overlap_costs):
            step = ours[name]
            window_us = step.window_ms * 1000
            pairs = {"computation": (costs.computation, step.compute_ms), "communication": (costs.communication, step.comm_ms),
                     "overlapping": (costs.overlap, step.overlap_ms), "other": (costs.other, step.idle_ms)}
            for label, (theirs_us, ours_ms) in pairs.items():
                assert abs(theirs_us - ours_ms * 1000) <= TOLERANCE * window_us, (rank.rank, name, label)
            compared += 1
    assert compared == 2 * 4  # two ranks, four active steps each
