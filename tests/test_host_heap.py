"""The profiler's window, and only it, gives large host blocks their own mapping (glibc's mallopt, recorded)."""

from torch.profiler import ProfilerAction, schedule

from commprof.instrument import host_heap
from commprof.instrument.host_heap import HEAP_UP_TO, M_MMAP_THRESHOLD, OWN_MAPPING_FROM, HeapDuringWindow


def calls_over(steps: int, enabled: bool, monkeypatch) -> tuple[list[ProfilerAction], list[tuple[int, int]]]:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(host_heap, "_mallopt", lambda: lambda param, value: calls.append((param, value)) or 1)
    wrapped = HeapDuringWindow(schedule(wait=2, warmup=1, active=2, repeat=1), enabled=enabled)
    return [wrapped(step) for step in range(steps)], calls


def test_the_threshold_drops_for_the_window_and_comes_back(monkeypatch):
    actions, calls = calls_over(8, True, monkeypatch)
    assert (
        actions
        == [ProfilerAction.NONE] * 2
        + [ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE]
        + [ProfilerAction.NONE] * 3
    )
    assert calls == [(M_MMAP_THRESHOLD, OWN_MAPPING_FROM), (M_MMAP_THRESHOLD, HEAP_UP_TO)]


def test_gpu_ranks_are_left_alone(monkeypatch):
    assert calls_over(8, False, monkeypatch)[1] == []


def test_a_users_own_malloc_settings_win(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert host_heap._mallopt() is None
