"""Plain torchrun, or commprof, with every rank's exit status observed: the launcher runs in this process as its own
command line would run it (`torch.distributed.run.main`, `commprof.cli.app.main`), and torch's agent's process
contexts are kept (commprof/launch/exit_status.observed_exits) to read each rank's exit code after it. Writes
{"exit": the launcher's exit code, "ranks": {local rank: exit code, negative for a signal}} to OUT.

    python benchmarks/check/observed.py torchrun|commprof OUT.json ARGS..."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from commprof.launch.exit_status import observed_exits  # noqa: E402


def run(launcher: str, args: list[str]) -> int:
    if launcher == "torchrun":
        from torch.distributed.run import main as torchrun

        torchrun(args)
        return 0
    from commprof.cli.app import main as commprof

    commprof(args)
    return 0


def main() -> None:
    launcher, out, args = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    with observed_exits() as exits:
        try:
            code = run(launcher, args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001 - torchrun raises ChildFailedError after printing it; its exit code is 1
            code = 1
    out.write_text(json.dumps({"exit": code, "ranks": exits}))
    sys.exit(code)


if __name__ == "__main__":
    main()
