"""A run seen while it goes on (issue 52, item 6): its ranks' whole-run records drawn as TensorBoard scalars as they
are rewritten, and its lasting change said on the progress line as soon as the records show it. Records built by
hand, each number checkable by eye; a real run's in tests/test_live_run.py."""

from __future__ import annotations

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from commprof.cli.progress_lines import StepLines
from commprof.commands.live import LiveRun
from commprof.launch.atomic import write_bytes_atomic
from commprof.launch.progress import Progress
from commprof.render.live_scalars import LiveScalars
from commprof.results.step_ledger import Call, LedgerBuilder, StepEntry, encode, ledger_path
from commprof.worker.step_ledger import HOST_CLOCK


def accumulated(folder):
    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    return accumulator


def scalars(folder, tag) -> dict[int, float]:
    return {event.step: event.value for event in accumulated(folder).Scalars(tag)}


def builders(ranks=(0, 1), timed_by=HOST_CLOCK) -> dict[int, LedgerBuilder]:
    return {rank: LedgerBuilder(rank, "vm", timed_by) for rank in ranks}


def add_steps(builder: LedgerBuilder, first: int, last: int, step_ms: float, comm_ms: float) -> None:
    """Steps `first`..`last`, each with one all-reduce of 8 MB in flight for `comm_ms`."""
    for step in range(first, last + 1):
        builder.add(StepEntry.of(step, step_ms + (step % 3 - 1), (Call("all_reduce", 8_000_000, 10.0, comm_ms),)))


def test_each_step_is_drawn_once_as_its_records_grow(tmp_path):
    live = LiveScalars(tmp_path)
    ranks = builders()
    for builder in ranks.values():
        add_steps(builder, 1, 3, 100.0, 40.0)
    assert live.add({r: b.ledger() for r, b in ranks.items()}) == 6
    add_steps(ranks[0], 4, 5, 200.0, 80.0)  # rank 1's record not rewritten yet: nothing new of it
    assert live.add({r: b.ledger() for r, b in ranks.items()}) == 2
    live.close()
    assert scalars(tmp_path / "rank0", "live/step_ms") == {1: 100.0, 2: 101.0, 3: 99.0, 4: 200.0, 5: 201.0}
    assert scalars(tmp_path / "rank1", "live/step_ms") == {1: 100.0, 2: 101.0, 3: 99.0}
    assert scalars(tmp_path / "rank0", "live/comm_in_flight_ms") == {1: 40.0, 2: 40.0, 3: 40.0, 4: 80.0, 5: 80.0}
    # 8 MB in 40 ms: 0.2 GB/s; in 80 ms: 0.1
    assert scalars(tmp_path / "rank0", "live/allreduce_GBps") == pytest.approx({1: 0.2, 2: 0.2, 3: 0.2, 4: 0.1, 5: 0.1})


def test_a_run_without_timed_collectives_draws_its_steps_only(tmp_path):
    untimed = LedgerBuilder(0, "vm", "")
    for step in (1, 2):
        untimed.add(StepEntry.of(step, 50.0))
    live = LiveScalars(tmp_path)
    live.add({0: untimed.ledger()})
    live.close()
    tags = accumulated(tmp_path / "rank0").Tags()["scalars"]
    assert tags == ["live/step_ms"]


def write_records(run_dir, ranks: dict[int, LedgerBuilder]) -> None:
    for rank, builder in ranks.items():
        write_bytes_atomic(ledger_path(run_dir, rank), encode(builder.ledger()))


def test_a_change_is_news_as_soon_as_the_records_show_it(tmp_path):
    """Steps of 100 ms (40 of them all-reduce) until step 40, then 300 (240): the link slowed at step 41. Before the
    records hold enough steps after it, nothing is said; then the progress line and the scalars' text say it."""
    live = LiveRun(tmp_path, None)
    live.tick()  # no record yet: nothing drawn, nothing said
    assert live.news == "" and not (tmp_path / "tensorboard").exists()
    ranks = builders()
    for builder in ranks.values():
        add_steps(builder, 1, 40, 100.0, 40.0)
        add_steps(builder, 41, 42, 300.0, 240.0)
    write_records(tmp_path, ranks)
    live.tick()
    assert live.news == ""  # two slow steps: not yet a change
    for builder in ranks.values():
        add_steps(builder, 43, 60, 300.0, 240.0)
    write_records(tmp_path, ranks)
    live.tick()
    expected = (
        "the step changed at step 41, 100.0 to 300.0 ms (+200%): the time with a collective in flight moved with it"
    )
    assert live.news == expected
    live.close()
    folder = tmp_path / "tensorboard" / "live"
    assert sorted(scalars(folder / "rank1", "live/step_ms")) == list(range(1, 61))
    said = accumulated(folder / "rank0").Tensors("live/change/text_summary")
    assert [(t.step, t.tensor_proto.string_val[0].decode()) for t in said] == [(41, expected)]


def test_a_steady_run_is_no_news(tmp_path):
    live = LiveRun(tmp_path, None)
    ranks = builders()
    for builder in ranks.values():
        add_steps(builder, 1, 80, 100.0, 40.0)
    write_records(tmp_path, ranks)
    live.tick()
    live.close()
    assert live.news == "" and not live.broken
    assert len(scalars(tmp_path / "tensorboard" / "live" / "rank0", "live/step_ms")) == 80


def test_a_view_that_cannot_be_written_ends_the_view_not_the_run(tmp_path):
    (tmp_path / "tensorboard").write_text("a file where the folder would be")
    live = LiveRun(tmp_path, None)
    ranks = builders()
    for builder in ranks.values():
        add_steps(builder, 1, 10, 100.0, 40.0)
    write_records(tmp_path, ranks)
    live.tick()  # raises nothing
    assert live.broken
    live.close()


def test_the_progress_line_says_the_news_at_once_and_on_every_line_after():
    lines: list[str] = []
    now = [0.0]
    news = [""]
    view = StepLines(lines.append, lambda: now[0], news=lambda: news[0])
    view.show(Progress(10, 100, 100.0))
    now[0] = 2.0
    view.show(Progress(30, 100, 100.0))  # nothing new, 2 s after the last line: nothing
    news[0] = "the step changed at step 41, 100.0 to 300.0 ms (+200%): the time with a collective in flight moved"
    now[0] = 3.0
    view.show(Progress(45, 100, 300.0))  # new: said at once
    now[0] = 4.0
    view.show(Progress(46, 100, 300.0))  # the same news: not again before the 10 s
    now[0] = 13.0
    view.show(Progress(75, 100, 300.0))
    assert [line.split("; ", 1)[1] if "; " in line else "" for line in lines] == ["", news[0], news[0]]
    assert lines[1].startswith("commprof: rank 0 training: step 45/100, 300.0 ms per step")
