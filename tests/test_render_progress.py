"""The words of the plain lines a log gets while a launch or other work runs (render/progress_words): what a line says,
given its values. When a line is due and which values it carries: tests/test_progress.py."""

from __future__ import annotations

from commprof.render.progress_words import (
    at_step,
    duration,
    launch_ended,
    stalled,
    starting,
    step_count,
    work_count,
    work_ended,
    work_so_far,
)


def test_duration():
    assert [duration(s) for s in (0, 7.4, 7.6, 65, 3723, -1)] == [
        "0:00:00",
        "0:00:07",
        "0:00:08",
        "0:01:05",
        "1:02:03",
        "0:00:00",
    ]


def test_a_step_of_a_known_total_and_of_none():
    assert (step_count(12, 20), step_count(119, None)) == ("12/20", "119")


def test_a_launch_starting():
    assert starting() == "starting ranks"
    assert starting(10.2) == "starting ranks, 0:00:10 so far"


def test_rank_0s_step_its_step_time_and_the_time_left():
    assert at_step(0, "training", 1, 20, 90.0) == "rank 0 training: step 1/20, 90.0 ms per step"
    assert at_step(0, "training", 12, 20, 85.34, eta_s=7.3) == (
        "rank 0 training: step 12/20, 85.3 ms per step, ETA 0:00:07"
    )
    assert at_step(0, "repeat 3/5 bucket-25mb", 40, 60, 100.0, eta_s=5.6) == (
        "rank 0 repeat 3/5 bucket-25mb: step 40/60, 100.0 ms per step, ETA 0:00:06"
    )
    assert at_step(0, "training", 119, None, 2.0) == "rank 0 training: step 119, 2.0 ms per step"  # a total unknown


def test_a_rank_that_has_done_no_step_gives_no_step_time():
    """Issue 53: a script with a syntax error first showed "training: step 0, 0.0 ms per step"."""
    assert at_step(0, "training", 0, None, 0.0) == "rank 0 training: no step done yet"
    assert at_step(0, "training", 0, 20, 0.0, eta_s=30.0) == "rank 0 training: no step done yet"


def test_a_stall_says_how_long_since_which_step_and_where_the_ranks_are():
    assert stalled(0, None, "profiling", 15, 40, 1164.2, 10) == (
        "rank 0 has finished no step for 0:00:10, since step 15/40 (profiling, 1164.2 ms per step before): it, or a "
        "rank it waits for, is stuck or slow"
    )
    assert stalled(1, "node1", "training", 31, 200, 80.0, 12, "rank 1 is at train.py:40") == (
        "rank 1 on node1 has finished no step for 0:00:12, since step 31/200 (training, 80.0 ms per step before): "
        "it, or a rank it waits for, is stuck or slow; rank 1 is at train.py:40"
    )
    assert stalled(0, None, "training", 0, None, 0.0, 30, "") == (
        "rank 0 has finished no step for 0:00:30, since it started (training): it, or a rank it waits for, is stuck "
        "or slow"
    )


def test_a_launchs_last_line():
    assert [
        launch_ended(33, False, 0, 20, 20),
        launch_ended(5, True, 0, 3, 20),
        launch_ended(5, True, 0, 3, None),
        launch_ended(13, True, 1, 31, 200),
        launch_ended(5, True),
        launch_ended(5, False),
    ] == [
        "rank 0 done: 20/20 steps in 0:00:33",
        "rank 0 stopped at step 3/20, after 0:00:05",
        "rank 0 stopped at step 3, after 0:00:05",
        "rank 1 stopped at step 31/200, after 0:00:13",
        "stopped before rank 0's first step, after 0:00:05",
        "done in 0:00:05",
    ]


def test_work_without_steps():
    assert work_so_far("analysing trace files", 10) == "analysing trace files, 0:00:10 so far"
    assert work_count("analysing trace files", 2, 8, 0.1, eta_s=60) == "analysing trace files: 2/8, 0.1/s, ETA 0:01:00"
    assert work_count("analysing trace files", 8, 8, 0.4) == "analysing trace files: 8/8, 0.4/s"
    assert work_ended("analysing trace files", 22, (8, 8)) == "analysing trace files: 8/8 in 0:00:22"
    assert work_ended("bench: gloo on 2 ranks", 11) == "bench: gloo on 2 ranks: done in 0:00:11"
