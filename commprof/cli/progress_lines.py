"""What a log gets while a command works, where a terminal gets a live display: plain lines, no control codes.

A launch (`StepLines`): one line when it starts and when rank 0 first enters each phase, at least one every
`EVERY_S` seconds while it runs (step, steps done, ETA, or how long rank 0 has finished no step and, once the ranks
have written their accounts of the stall, where each is), one at once when the run shows something new (its lasting
change, then said on every line), and a last one with the final count. Work without
steps (`WorkLines`: trace files analysed, a bench): nothing while it is short; once it has run `EVERY_S`
seconds, a line every `EVERY_S` seconds and a last one. Pure: the caller gives the clock and where the lines
go, and calls `show`/`tick` as often as it likes (cli/progress polls a few times a second). The words are
render/progress_words'; this chooses when a line is due and the values it says."""

from __future__ import annotations

from typing import Callable

from commprof.launch.progress import Progress
from commprof.render import progress_words as words

EVERY_S = 10.0
STALLED_S = 10.0  # rank 0 finished no step for this long, and for 5 of its latest steps: the line says so
PREFIX = "commprof: "

Clock = Callable[[], float]
Write = Callable[[str], None]


def phase_kind(phase: str) -> str:
    """A phase without what it works on: a sweep's `repeat 2/5 bucket-25mb` is a `repeat`. A line is due when the
    kind changes, not at each setting's turn of a few steps."""
    return phase.split(" ", 1)[0]


class StepLines:
    """A launch's progress, from the states rank 0 writes to its progress file (None: none written yet)."""

    def __init__(
        self,
        write: Write,
        clock: Clock,
        every_s: float = EVERY_S,
        hang: Callable[[], str | None] = str,
        subject: str = "",
        news: Callable[[], str] = str,
    ):
        """`hang`: where the stalled ranks are, from what they wrote about themselves (launch/hang_evidence), or
        "" / None while they have written nothing. `subject`: which launch of several this is (a sweep's setting
        and repeat), said on every line. `news`: what the run has shown so far ("" while nothing), said at once when
        it is new and at the end of every line after."""
        self.write, self.clock, self.every_s, self.hang, self.news = write, clock, every_s, hang, news
        self.told = ""
        self.prefix = PREFIX + (f"{subject}: " if subject else "")
        self.started = self.last_line = clock()
        self.kinds: set[str] = set()  # the phases seen: a line when one begins for the first time
        self.first: tuple[float, int] | None = None  # when the first state was seen, and its step
        self.moved: tuple[float, int] | None = None  # when rank 0's step count last changed, and to what

    def start(self) -> None:
        self._say(words.starting())

    def show(self, state: Progress | None) -> None:
        now = self.clock()
        if state is None:
            if now - self.last_line >= self.every_s:
                self._say(words.starting(now - self.started))
            return
        if self.first is None:
            self.first = (now, state.step)
        if self.moved is None or self.moved[1] != state.step:
            self.moved = (now, state.step)
        kind = phase_kind(state.phase)
        news = self.news()
        if kind in self.kinds and now - self.last_line < self.every_s and news == self.told:
            return
        self.kinds.add(kind)
        self.told = news
        self._say(self.line(state, now) + (f"; {news}" if news else ""))

    def line(self, state: Progress, now: float) -> str:
        """What rank 0's state says now: how long it has finished no step, once that is a stall (STALLED_S, and five
        of its latest steps); else its step, its latest step time and the time left (`eta_s`)."""
        still_s = now - (self.moved or (now, state.step))[0]
        stepping = state.phase != "writing traces" and (state.steps is None or state.step < state.steps)
        if stepping and still_s >= max(STALLED_S, 5 * state.step_ms / 1000):
            return words.stalled(
                state.rank, state.host, state.phase, state.step, state.steps, state.step_ms, still_s, self.hang()
            )
        return words.at_step(state.rank, state.phase, state.step, state.steps, state.step_ms, self.eta_s(state, now))

    def eta_s(self, state: Progress, now: float) -> float | None:
        """The steps left at the pace seen since the first state was read (all phases together, as the total counts
        them); None before that pace is known (a first step's time holds the start's), while the total is not known,
        and at step 0 (started, no step done: a script that fails at once ends here)."""
        seen_at, seen_step = self.first or (now, state.step)
        if state.steps is None or state.step == 0 or state.step >= state.steps or state.step <= seen_step:
            return None
        return (state.steps - state.step) * (now - seen_at) / (state.step - seen_step)

    def end(self, state: Progress | None, failed: bool) -> None:
        """The last line: the steps really run, from the last state rank 0 wrote (read after the launch ended)."""
        took_s = self.clock() - self.started
        if state is None:
            self._say(words.launch_ended(took_s, failed))
        else:  # done: every step that ran, of a total that is now known (the steps run, where none was given)
            steps = state.steps if failed else state.steps or state.step
            self._say(words.launch_ended(took_s, failed, state.rank, state.step, steps))

    def _say(self, text: str) -> None:
        self.write(self.prefix + text)
        self.last_line = self.clock()


class WorkLines:
    """Work with no steps of rank 0: a count of items (`update(done, total)`), or none at all (a bench)."""

    def __init__(self, description: str, write: Write, clock: Clock, every_s: float = EVERY_S):
        self.description, self.write, self.clock, self.every_s = description, write, clock, every_s
        self.started = self.last_line = clock()
        self.count: tuple[int, int] | None = None
        self.said = False

    def update(self, done: int, total: int) -> None:
        self.count = (done, total)

    def tick(self) -> None:
        now = self.clock()
        if now - self.last_line < self.every_s:
            return
        elapsed = now - self.started
        if self.count is None or self.count[0] == 0:
            self._say(words.work_so_far(self.description, elapsed))
            return
        done, total = self.count
        eta_s = (total - done) * elapsed / done if done < total else None
        self._say(words.work_count(self.description, done, total, done / elapsed, eta_s))

    def end(self) -> None:
        """The last line, if the work was long enough to have any."""
        if not self.said:
            return
        self._say(words.work_ended(self.description, self.clock() - self.started, self.count))

    def _say(self, text: str) -> None:
        self.write(PREFIX + text)
        self.last_line, self.said = self.clock(), True
