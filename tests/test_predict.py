"""The scaling model, checked by hand on tiny profiles whose answer is known."""

import pytest

from commprof.analysis.predict import LinkModel, StepProfile, fit_compute, fit_link, parse_link, rebucket, simulate_step
from commprof.analysis.scaling import Prediction, ScalePoint, job_step_times, predict
from commprof.analysis.stats import Estimate
from commprof.errors import UsageError
from commprof.results.finding_facts import LinkSource
from tests.conftest import run_record

MB = 1024 * 1024


def profile(n=2, compute=(10.0, 20.0, 5.0), exposed=0.0, buckets=((4 * MB, 0.5), (4 * MB, 1.0)), transfers=()):
    before, backward, tail = compute
    return StepProfile(
        n, before, backward, tail, exposed, [b for b, _ in buckets], [f for _, f in buckets], list(transfers)
    )


def test_ring_allreduce_cost():
    link = LinkModel(alpha_us=5.0, bandwidth_gbps=1.0, source="test")
    # 2(n-1)·alpha + 2(n-1)/n · S/B: n=4, S=3 MB: 6·5 us + 1.5 · 3e6 B / 1e3 B/us = 30 + 4500 us
    assert link.allreduce_us(3e6, 4) == pytest.approx(4530.0)
    assert link.allreduce_us(3e6, 1) == 0.0


def test_buckets_overlap_backward_one_after_another():
    link = LinkModel(alpha_us=0.0, bandwidth_gbps=1.0, source="test")
    reference = profile()
    compute = fit_compute([reference])  # flat: 35 ms at every size
    # n=2: each 4 MiB bucket takes 4,194,304 / 1e3 us = 4.194 ms. Backward 20 ms.
    # bucket 0 ready at 10 ms, done 14.19; bucket 1 ready at 20 ms, done 24.19 -> exposed 4.19 ms
    step, exposed = simulate_step(reference, compute, link, 2, rebucket(reference, None, None))
    assert exposed == pytest.approx(4.194304)
    assert step == pytest.approx(35 + 4.194304)
    # a slow link: bucket 0 runs 10 -> 10 + 41.9; bucket 1 waits for it and ends at 10 + 83.9 ms
    slow = LinkModel(0.0, 0.1, "test")
    step, exposed = simulate_step(reference, compute, slow, 2, rebucket(reference, None, None))
    assert exposed == pytest.approx(10 + 2 * 41.94304 - 20)


def test_link_fit_recovers_alpha_and_bandwidth():
    truth = LinkModel(alpha_us=50.0, bandwidth_gbps=2.0, source="truth")
    transfers = [(size, n, truth.allreduce_us(size, n)) for size in (MB, 4 * MB, 16 * MB) for n in (2, 3, 4)]
    fitted = fit_link([profile(transfers=transfers)])
    assert fitted.alpha_us == pytest.approx(50.0, rel=1e-6)
    assert fitted.bandwidth_gbps == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(UsageError, match="at 2 ranks or more"):
        fit_link([profile(n=1)])


def test_parse_link():
    assert parse_link("25GB/s,5us") == LinkModel(5.0, 25.0, LinkSource("given", given="25GB/s,5us"))
    assert parse_link("100Gb/s,2ms").bandwidth_gbps == 12.5 and parse_link("100Gb/s,2ms").alpha_us == 2000
    for bad in ("fast", "25GB/s", "0GB/s,5us"):
        with pytest.raises(UsageError, match="--link must look like"):
            parse_link(bad)


def test_compute_line_never_falls():
    rising = fit_compute(
        [profile(n=1, compute=(5, 10, 5)), profile(n=2, compute=(10, 20, 10)), profile(n=3, compute=(15, 30, 15))]
    )
    assert (rising.at(1), rising.at(4)) == (pytest.approx(20.0), pytest.approx(80.0))
    falling = fit_compute([profile(n=2, compute=(10, 20, 10)), profile(n=4, compute=(9, 18, 9))])
    assert falling.slope_ms == 0.0 and falling.at(64) == pytest.approx(38.0)


def test_rebucketing_follows_ddp_and_interpolates_ready_times():
    # parameters registered a, b, c, d (1, 1, 2, 4 MiB): gradients ready in reverse, d first
    parameter_bytes = [MB, MB, 2 * MB, 4 * MB]
    reference = profile(buckets=((4 * MB, 0.5), (4 * MB, 1.0)))  # measured: d at 0.5, then c+b+a at 1.0
    # cap 2 MiB: d (4) closes a bucket, c (2) another, b + a (2) the last; c ends at 6 of 8 MiB: 0.75
    assert rebucket(reference, parameter_bytes, 2) == [
        (4 * MB, 0.5),
        (2 * MB, pytest.approx(0.75)),
        (2 * MB, pytest.approx(1.0)),
    ]
    assert rebucket(reference, parameter_bytes, 100) == [(8 * MB, 1.0)]


def test_unprofiled_job_steps():
    steps = [[9, 9, 9, 1, 5, 5, 5, 2, 3], [9, 9, 9, 2, 6, 6, 6, 1, 3]]
    # steps 4-6 traced, step 7 waits for the traces to be written: steps 3 and 8 remain
    assert job_step_times(run_record((4, 1, 2), steps)) == [2, 3]
    assert job_step_times(run_record((0, 1, 8), steps)) == [9, 9, 2, 6, 6, 6, 2, 3]  # all traced


def test_predictions_pick_the_best_cap():
    reference = profile(n=2, buckets=((4 * MB, 0.5), (4 * MB, 1.0)))
    base = ScalePoint(1, 32, 32, 0.1, Estimate(35.0, 34.0, 36.0), 32 / 0.035, 1.0, 1.0, 35.0, 0.0, 0.0, None)
    link = LinkModel(0.0, 1.0, "test")
    (at4,) = predict(
        [base], reference, fit_compute([reference]), link, [4], 32, False, 0.1, 1.0, [MB, MB, 2 * MB, 4 * MB]
    )
    assert isinstance(at4, Prediction) and at4.global_batch == 128 and at4.learning_rate == pytest.approx(0.4)
    # 4 ranks: 1.5 · 4 MiB / 1 GB/s = 6.29 ms per 4 MiB bucket; the small caps start sending earlier
    assert at4.exposed_comm_ms == pytest.approx(6.291456)
    assert at4.best_bucket_cap_mb in (1.0, 2.0) and at4.best_step_ms < at4.step_ms
    assert at4.efficiency == pytest.approx(at4.speedup / 4)


def test_one_nccl_rank_gives_the_shape_of_its_computation():
    """NCCL launches no all-reduce kernel for a group of one (the real world-size-1 trace): scale's first
    size still gives a profile, computation only, and the fit goes on with the larger sizes."""
    from pathlib import Path

    from commprof.analysis.predict import step_profile
    from commprof.trace.load import load_run

    alone = step_profile(load_run([Path(__file__).parent / "data" / "traces" / "nccl-v100-world1"], workers=1))
    assert (alone.world_size, alone.bucket_bytes, alone.transfers, alone.exposed_ms) == (1, [], [], 0.0)
    # medians over the 5 steps, by hand from the trace: backward start, finalize_backward's end, step end (the
    # end of the last device work the step launched, a memcpy included)
    assert (alone.before_backward_ms, alone.backward_ms, alone.tail_ms) == pytest.approx((30.5325, 64.0905, 1.11325))
    compute = fit_compute([alone, profile(n=2, compute=(30.0, 70.0, 1.0))])
    assert compute.slope_ms == pytest.approx((101.0 - alone.compute_ms) / 1)
    step_ms, exposed_ms = simulate_step(profile(), compute, LinkModel(5.0, 25.0, "test"), 1, [])
    assert exposed_ms == 0.0 and step_ms == pytest.approx(compute.at(1))


def test_the_link_from_the_runs_own_probe_ignores_slow_repeats():
    """4 KiB in 200 us and 4 MiB in 4200 us at the lower quartile, whatever the preempted repeats took: on 2 ranks
    t = 2·alpha + S/B, so B = (4 MiB - 4 KiB) / 4000 us = 1.05 GB/s and alpha = (200 - 3.9) / 2 = 98 us."""
    from commprof.analysis.predict import probed_link
    from commprof.results.run_record import ProbedSize

    probe = [
        ProbedSize(4096, [200.0, 210, 4000, 190, 205, 3900, 230, 200]),
        ProbedSize(4 * 2**20, [4200.0, 4300, 9000, 4100, 4250, 4200, 8800, 4210]),
    ]
    link = probed_link(probe, 2)
    assert link.bandwidth_gbps == pytest.approx((4 * 2**20 - 4096) / 4000 / 1e3)
    assert link.alpha_us == pytest.approx((200 - 4096 / (link.bandwidth_gbps * 1e3)) / 2)
    assert link.allreduce_us(4096, 2) == pytest.approx(200.0)
    assert link.allreduce_us(4 * 2**20, 2) == pytest.approx(4200.0)
