"""A script's own output on the terminal as `torchrun --tee` shows it, each line prefixed with its rank, while every
rank's output also goes to its log files. torch's tee cannot leave out a line; this one leaves out the markers torch's
profiler (kineto) writes as commprof's profiler starts and stops, which are commprof's, not the script's."""

from __future__ import annotations

import re
import sys

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
from torch.distributed.elastic.multiprocessing.api import LogsDest
from torch.distributed.elastic.multiprocessing.tail_log import TailLog

KINETO_MARKER = re.compile(r"(USDT|STAGE):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \w+\.cpp:\d+\] ")


def the_scripts(line: str) -> bool:
    return KINETO_MARKER.match(line) is None


class ShownLogs(DefaultLogsSpecs):
    """Every rank's stdout and stderr to its files; `shown` ('all', 'rank0' or 'none') of them also to this process's
    stdout and stderr, from the moment the ranks start until `stop`."""

    def __init__(self, log_dir: str, shown: str):
        super().__init__(log_dir=log_dir, redirects=Std.ALL)
        self.shown = shown
        self.tails: list[TailLog] = []

    def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
        dest = super().reify(envs)
        ranks = [r for r in envs if self.shown == "all" or (self.shown == "rank0" and r == 0)]
        if ranks:
            prefixes = {r: f"[rank{envs[r]['RANK']}]: " for r in ranks}
            for files, stream in ((dest.stdouts, sys.stdout), (dest.stderrs, sys.stderr)):
                tail = TailLog("script", {r: files[r] for r in ranks}, stream, prefixes, log_line_filter=the_scripts)
                self.tails.append(tail.start())
        return dest

    def stop(self) -> None:
        """Once the ranks have exited: what they wrote last is shown, then the tails end."""
        for tail in self.tails:
            tail.stop()
        self.tails = []
