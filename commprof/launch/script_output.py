"""A script's own output on the terminal as `torchrun --tee` shows it, each line prefixed with its rank, while every
rank's output also goes to its log files. torch's tee cannot leave out a line; this one leaves out what commprof itself
makes a rank write: the markers torch's profiler (kineto) writes as commprof's profiler starts and stops, and the
stacks of every thread faulthandler writes when a rank crashes or is stopped (commprof's diagnostics, read from the
logs by launch/faults.py). The backend's own words (Gloo's `terminate called ... what():`) and the script's traceback
stay."""

from __future__ import annotations

import re
import sys
from contextlib import ExitStack
from typing import TextIO

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from torch.distributed.elastic.multiprocessing.api import LogsDest
from torch.distributed.elastic.multiprocessing.tail_log import TailLog

KINETO_MARKER = re.compile(r"(USDT|STAGE):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \w+\.cpp:\d+\] ")
# faulthandler's dump: its header, each thread's heading, its frames (`File "f", line 3 in g`: no comma, unlike a
# traceback's), the extension modules it lists
FAULTHANDLER_LINE = re.compile(
    r"Fatal Python error: |(Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):|"
    r"  File \".*\", line \d+ in \S+\s*$|  <no Python frame>|Extension modules: |Stack \(most recent call first\):"
)


def the_scripts(line: str) -> bool:
    return KINETO_MARKER.match(line) is None and FAULTHANDLER_LINE.match(line) is None


def _terminal_or_file(stream: TextIO) -> TextIO:
    """Where a script's lines go: through the progress display's proxy when the stream is the terminal it draws on
    (the lines then appear above it), else to the stream itself (`> out.txt` gets the script's stdout)."""
    real = getattr(stream, "rich_proxied_file", stream)
    return stream if real.isatty() else real


class ShownLogs(DefaultLogsSpecs):
    """Every rank's stdout and stderr to its files; `shown` ('all', 'rank0' or 'none') of them also to this process's
    stdout and stderr, from the moment the ranks start until `stop`."""

    def __init__(self, log_dir: str, shown: str):
        super().__init__(log_dir=log_dir, redirects=Std.ALL)
        self.shown = shown
        self.tails: list[TailLog] = []
        self.streams: list[TextIO] = []

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        dest = super().reify(envs)
        ranks = [r for r in envs if self.shown == "all" or (self.shown == "rank0" and r == 0)]
        if ranks:
            prefixes = {r: f"[rank{envs[r]['RANK']}]: " for r in ranks}
            for files, stream in ((dest.stdouts, sys.stdout), (dest.stderrs, sys.stderr)):
                shown_on = _terminal_or_file(stream)
                tail = TailLog("script", {r: files[r] for r in ranks}, shown_on, prefixes, log_line_filter=the_scripts)
                self.tails.append(tail.start())
                self.streams.append(shown_on)
        return dest

    def stop(self) -> None:
        """Once the ranks have exited: what they wrote last is shown, then the tails end (every one of them, even
        when a second Ctrl-C interrupts the first: a tail left running would keep the process from exiting)."""
        tails, streams, self.tails, self.streams = self.tails, self.streams, [], []
        with ExitStack() as stopping:
            for stream in streams:
                stopping.callback(stream.flush)  # a last line without its newline, kept by a proxy
            for tail in tails:
                stopping.callback(tail.stop)
