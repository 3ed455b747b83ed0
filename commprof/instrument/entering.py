"""A rank's latest collective, recorded as it is called, before it enters the backend: what an abort inside the
backend cannot lose. Gloo aborts a rank whose peer sent a piece of another size (SIGABRT, from a thread of its own)
before the rank's own account is written (instrument/hang_watch.py), so without this the aborted rank's tensors were
not known. One fixed-size file per rank in the launch's log folder, rewritten in place by one pwrite per call
(results/hang.read_entering reads it; launch/parted.py names both ranks' tensors from it)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec
import torch

from commprof.results.hang import ENTERING_BYTES, FOLDER_VARIABLE, EnteredCollective, entering_path

MAX_TENSORS = 8  # a call's tensors recorded: a list of more is cut there
DTYPES = {  # torch's own names for them, as its Flight Recorder writes them (c10::toString(ScalarType))
    torch.float32: "Float",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.float64: "Double",
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
}


class EnteringRecord:
    """The file of one rank's latest collective, open for the run."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    @classmethod
    def from_environment(cls, rank: int) -> EnteringRecord | None:
        """In a rank the launch watches (its log folder named in the environment); None elsewhere, or where the
        folder takes no file."""
        folder = os.environ.get(FOLDER_VARIABLE)
        if not folder:
            return None
        try:
            return cls(entering_path(Path(folder), rank))
        except OSError:
            return None

    def write(self, op: str, group: str, desc: str, tensors: list[torch.Tensor]) -> None:
        """This call, as its Flight Recorder would hold it (its sequence number not known here: 0)."""
        shown = tensors[:MAX_TENSORS]
        call = EnteredCollective(
            group=group,
            group_desc=desc,
            seq=0,
            op=op,
            sizes=[list(t.shape) for t in shown],
            dtypes=[DTYPES.get(t.dtype, str(t.dtype).removeprefix("torch.")) for t in shown],
            completed=False,
            entered_s=time.time(),
        )
        data = msgspec.json.encode(call)
        if len(data) <= ENTERING_BYTES:
            os.pwrite(self.fd, data.ljust(ENTERING_BYTES), 0)

    def close(self) -> None:
        os.close(self.fd)
