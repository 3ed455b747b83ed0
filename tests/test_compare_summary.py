"""compare's verdict, as facts (its words: tests/test_render_verdict_words.py): a winner only with an interval on the
job's unprofiled steps that clears the noise and the practical threshold (3% of the step); otherwise no significant
difference."""

import pytest

from commprof.analysis.distortion import job_drift_ms, unprofiled_job_steps
from commprof.commands.compare import verdict
from commprof.results.compare import BackendRun
from tests.conftest import run_record


def ran(name: str, steps: list[float], launches: list[float] | None = None) -> BackendRun:
    return BackendRun(
        backend=name,
        available=True,
        step_ms=sorted(steps)[len(steps) // 2],
        comm_ms=1.0,
        exposed_comm_ms=0.5,
        overlap_ms=0.5,
        job_steps_ms=steps,
        launch_ms=launches or [],
    )


def test_a_clear_winner_is_named_with_its_interval():
    said = verdict([ran("gloo", [20.0, 21.0, 19.5, 20.5, 20.2]), ran("mpi", [10.0, 10.5, 9.8, 10.2, 10.1])])
    assert (said.outcome, said.best, said.runner_up, said.rounds) == ("wins", "mpi", "gloo", 0)
    assert said.speedup.value == pytest.approx(2.0, abs=0.01) and said.speedup.low > 1


def test_overlapping_runs_and_a_tiny_steady_gain_have_no_winner():
    noisy = verdict([ran("gloo", [10.0, 14.0, 9.0, 13.0, 11.0]), ran("mpi", [9.5, 13.5, 10.5, 12.0, 11.5])])
    assert noisy.outcome == "no_difference"
    steady = verdict([ran("gloo", [10.2, 10.21, 10.22, 10.2, 10.21]), ran("mpi", [10.0, 10.01, 10.02, 10.0, 10.01])])
    assert (steady.outcome, steady.best) == ("no_difference", "mpi")  # its interval excludes 1, but under 3%
    assert steady.speedup.low > 1 and steady.speedup.value == pytest.approx(1.02, abs=0.005)


def test_one_unprofiled_step_gives_no_winner():
    assert verdict([ran("gloo", [20.0]), ran("mpi", [10.0])]).outcome == "too_few"


def test_the_jobs_own_drift_across_the_window():
    """Schedule 6,1,2 traces steps 6-8: steps 3-5 before it (slowest rank 20, 22, 21: median 21), step 9 waits
    for the traces, steps 10-12 after it (25, 27, 26: median 26): the job's step moved 5 ms on its own. With two
    steps on a side it is not measured."""
    steps = [[90, 50, 50, 20, 22, 21, 9, 9, 9, 70, 25, 27, 26], [90, 50, 50, 19, 21, 20, 9, 9, 9, 80, 24, 26, 25]]
    assert job_drift_ms(run_record((6, 1, 2), steps)) == pytest.approx(5.0)
    assert job_drift_ms(run_record((5, 1, 2), steps)) == 0.0


def test_the_jobs_unprofiled_steps_are_its_slowest_ranks_outside_the_window():
    """Schedule 1,1,2 traces steps 1-3 and writes the traces before step 4 (which waits for the slower
    writer); the first 3 steps are warm-up: steps 5 and 6 remain, each the slower rank's."""
    run = run_record((1, 1, 2), [[90, 50, 50, 50, 70, 10, 12], [90, 50, 50, 50, 80, 11, 9]])
    assert unprofiled_job_steps(run) == [11, 12]
    assert unprofiled_job_steps(run_record()) == []


def test_interleaved_launches_claim_over_the_spread_between_launches():
    """Issue 60: three interleaved launches a backend. Each launch's steps are tight (a claim from one launch's steps
    is easy), but the launches spread: mpi's 10, 14 and 9 ms against gloo's 11, 12 and 10, ratios 1.1, 0.857 and
    1.111 round by round: no winner. mpi at half of gloo's step in every round: mpi wins, 2x exactly."""
    tight = [10.0, 10.01, 10.02, 10.0, 10.01]
    spread = verdict([ran("gloo", [t + 1 for t in tight], [11.0, 12.0, 10.0]), ran("mpi", tight, [10.0, 14.0, 9.0])])
    assert (spread.outcome, spread.rounds) == ("no_difference", 3)
    half = verdict([ran("gloo", tight, [20.0, 24.0, 18.0]), ran("mpi", tight, [10.0, 12.0, 9.0])])
    assert (half.outcome, half.best, half.rounds) == ("wins", "mpi", 3)
    assert (half.speedup.value, half.speedup.low, half.speedup.high) == pytest.approx((2.0, 2.0, 2.0))
