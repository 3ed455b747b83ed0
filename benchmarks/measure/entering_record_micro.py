"""What recording a collective before the backend runs it costs a call (instrument/entering.py): EnteringRecord.write
timed alone, one 1,000-float tensor a call, in a file of a temporary folder, the mean of each repeat's calls.

    python benchmarks/measure/entering_record_micro.py [--calls 20000] [--repeats 3]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from commprof.instrument.entering import EnteringRecord  # noqa: E402
from commprof.results.hang import entering_path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tensors = [torch.ones(1000)]
    with tempfile.TemporaryDirectory() as folder:
        record = EnteringRecord(entering_path(Path(folder), 0))
        for _ in range(args.repeats):
            started = time.perf_counter()
            for _ in range(args.calls):
                record.write("all_reduce", "0", "default_pg", tensors)
            print(f"{(time.perf_counter() - started) / args.calls * 1e6:.2f} us a call")
        record.close()


if __name__ == "__main__":
    main()
