"""The out-of-memory killer's own count: how many processes the kernel killed for memory in this process's memory
cgroup (cgroup v2's memory.events, v1's memory.oom_control: `oom_kill N`). A rank that vanished without a trace is
said to have been killed for memory only when this count grew during the launch: never as a guess."""

from __future__ import annotations

from pathlib import Path

CGROUPS = Path("/sys/fs/cgroup")


def oom_kills(proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUPS) -> int | None:
    """The kernel's count of out-of-memory kills in this process's memory cgroup; None where it cannot be read."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        inside = path.lstrip("/")
        if controllers == "":  # cgroup v2
            candidates += [root / inside / "memory.events", root / "unified" / inside / "memory.events"]
        elif "memory" in controllers.split(","):  # cgroup v1
            candidates.append(root / "memory" / inside / "memory.oom_control")
    # inside a container the process's own cgroup is often the root of what it sees
    candidates += [root / "memory.events", root / "memory" / "memory.oom_control"]
    for file in candidates:
        count = _oom_kill(file)
        if count is not None:
            return count
    return None


def _oom_kill(file: Path) -> int | None:
    try:
        text = file.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


class OomWatch:
    """The count when a launch starts; `killed()`: how many the kernel killed for memory since (0 where unknown)."""

    def __init__(self) -> None:
        self.before = oom_kills()

    def killed(self) -> int:
        after = oom_kills()
        return after - self.before if after is not None and self.before is not None else 0
