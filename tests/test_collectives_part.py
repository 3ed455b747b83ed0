"""Positive controls for desyncs (issue 40): a script whose ranks' collectives part at step 3, in four ways, on 2
real Gloo ranks. Each is named by kind: the three that stop the job with the line of the script that called it,
within --timeout; the one Gloo lets pass (a dtype that differs, the same bytes) in the report of the run."""

import re
import time

import pytest

from commprof.results.store import load_report
from tests.conftest import REPO, commprof, commprof_here

pytestmark = pytest.mark.slow
SCRIPT = REPO / "tests" / "data" / "scripts" / "collectives_part.py"
TIMEOUT = 8
SHAPE_LINE = re.escape("collectives_part.py:31 in parted (dist.all_reduce(torch.ones(2 if rank == 0 else 3)))")
SIZE_LINE = re.escape("collectives_part.py:38 in parted (dist.all_reduce(torch.ones(1000 if rank == LARGER else 999)))")
OP_LINE = re.escape("collectives_part.py:36 in parted (dist.all_reduce(t) if rank == 0 else dist.broadcast(t, src=0))")
EXPECTED = {
    # Gloo lets the rank with fewer elements finish; the other waits: each rank's own account names them
    "shape": rf"the ranks' collectives part at #\d+ of the default group: rank 0 ran all_reduce of 1 tensor of 2 "
    rf"Float, 8 B at {SHAPE_LINE} where rank 1 ran all_reduce of 1 tensor of 3 Float, 12 B at {SHAPE_LINE}: the same "
    r"collective with tensors of different shapes; ",
    "op": rf"the ranks' collectives part at #\d+ of the default group: rank 0 ran all_reduce of 1 tensor of 4 Float, "
    rf"16 B at {OP_LINE} where rank 1 ran broadcast of 1 tensor of 4 Float, 16 B at {OP_LINE}: different collectives "
    r"at the same position; ",
    # Gloo aborts the rank that receives a larger piece than its collective expects, before it can write its account:
    # its log says which line called it, the record it wrote as it called it its tensor; rank 1's account, written as
    # it failed, holds its last collectives (none called from that line)
    "extra": r"rank 0 on \S+ was killed by signal 6 \(SIGABRT\): its collective at collectives_part\.py:23 in "
    r"log_mean_loss \(dist\.all_reduce\(t\)\): rank 0's all_reduce of the default group had 1 tensor of 1 Float, "
    r"4 B; none of rank 1's last \d+ collectives was called from that line: a collective that only some ranks run",
    # 1,000 floats against 999, the larger on rank 0 or on rank 1: Gloo aborts the smaller, whichever rank it is,
    # before it writes its account; the record it wrote as it called the collective names its 999 floats, and the
    # larger's account its 1,000: both named, Gloo's pieces (1000 bytes against 996) not called either's
    **{
        f"size{larger}": rf"rank {1 - larger} on \S+ was killed by signal 6 \(SIGABRT\): its collective at "
        rf"{SIZE_LINE}: rank 0's all_reduce (#\d+ )?of the default group had 1 tensor of "
        rf"{'1,000' if larger == 0 else '999'} Float, [\d.]+ KiB where rank 1's had 1 tensor of "
        rf"{'999' if larger == 0 else '1,000'} Float, [\d.]+ KiB: tensors that differ between the ranks"
        for larger in (0, 1)
    },
}


@pytest.mark.parametrize("kind", ["extra", "op", "size0"])  # shape, size1: benchmarks/check/controls
def test_a_desync_is_named_by_kind_with_the_scripts_line(tmp_path, kind):
    named_by_kind(tmp_path, kind)


def named_by_kind(tmp_path, kind: str) -> None:
    """The job stops within --timeout, its one line naming the desync of this kind with the script's line."""
    started = time.monotonic()
    args = ["run", "--run-id", kind, "--timeout", str(TIMEOUT), "--quiet", "--", str(SCRIPT), kind]
    result = commprof(*args, cwd=tmp_path, timeout=120)
    assert result.returncode == 1 and time.monotonic() - started < TIMEOUT + 60, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert re.match(r"error: " + EXPECTED[kind], line), line


def test_a_dtype_the_backend_lets_pass_is_named_in_the_report(tmp_path):
    """float32 against int32, 16 bytes each: Gloo reduces them without an error and the script runs to its end;
    the ranks' whole-run collectives part at that all-reduce, and the report says so."""
    args = ["run", "--run-id", "dtype", "--timeout", str(TIMEOUT), "--quiet", "--", str(SCRIPT), "dtype"]
    result = commprof_here(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    parted = load_report(tmp_path / "reports" / "dtype").run.desync  # said in the notes (render/notes_text.py)
    assert parted is not None and parted.mismatch == "dtype" and not parted.lines_known
    sides = [(side.ranks, side.call.op, side.call.dtypes, side.call.sizes) for side in (parted.first, parted.second)]
    assert sides == [((0,), "all_reduce", ["Float"], [[4]]), ((1,), "all_reduce", ["Int"], [[4]])]
    assert "collectives part at #" in (tmp_path / "reports" / "dtype" / "report.md").read_text()
