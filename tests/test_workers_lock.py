"""The lock that lets a `solo` test run alone under two pytest-xdist workers (tests/conftest.py)."""

import threading

from tests.conftest import workers_lock


def test_a_solo_test_waits_for_the_test_beside_it_and_tests_beside_each_other_share(tmp_path):
    solo_in, solo_may_leave = threading.Event(), threading.Event()

    def solo():
        with workers_lock(exclusive=True, folder=tmp_path):
            solo_in.set()
            solo_may_leave.wait(10)

    ordinary = [workers_lock(exclusive=False, folder=tmp_path) for _ in range(2)]  # two ordinary tests at once
    with ordinary[0], ordinary[1]:
        waiting = threading.Thread(target=solo)
        waiting.start()
        assert not solo_in.wait(0.5)  # the solo test cannot start while they run
    assert solo_in.wait(10)  # it starts when they end
    solo_may_leave.set()
    waiting.join(10)
    assert not waiting.is_alive()
