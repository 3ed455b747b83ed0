"""`commprof diagnose`: the same hang as a failed run, from the Flight Recorder dumps of a job commprof did not launch
(one pickle per rank, as torch writes them) or its logs' watchdog lines, read as data only. The facts
(commands/diagnose.py); the CLI prints their words (tests/test_render_hang_words.py)."""

import pickle
import shutil
from pathlib import Path

import pytest

from commprof.cli.app import main
from commprof.commands.diagnose import diagnose
from commprof.render.hang_words import diagnosis_text
from commprof.results.failure_facts import Behind, Hang, Parting, Side
from commprof.results.hang import EnteredCollective, StackFrame
from tests.conftest import REPO


def dump(seqs: list[tuple[int, int, str, int]], completed: int) -> bytes:
    """A rank's dump: (seq, elements, op, line of train.py) per collective of the default group, as torch 2.13's
    `_dump_fr_trace()` pickles it (the fields commprof reads)."""
    entries = [
        {
            "collective_seq_id": seq,
            "input_dtypes": ["Float"],
            "input_sizes": [[numel]],
            "is_p2p": False,
            "pg_id": 0,
            "process_group": ("0", "default_pg"),
            "profiling_name": f"nccl:{op}",
            "time_created_ns": 1_795_748_100_000_000_000 + seq * 10**9,
            "frames": [{"name": "main", "filename": "/home/u/train.py", "line": line}],
        }
        for seq, numel, op, line in seqs
    ]
    return pickle.dumps(
        {"version": "2.10", "entries": entries, "pg_status": {"0": {"last_completed_collective": completed}}}
    )


def diagnosed(capsys, *paths) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["diagnose", *map(str, paths)])
    out = capsys.readouterr()
    return exit_info.value.code, out.out.strip(), out.err.strip()


def diagnosed_hang(capsys, *paths) -> tuple[Hang, int]:
    """The hang the evidence in `paths` tells and how many ranks left it; the command prints its words, alone."""
    hang, ranks = diagnose([Path(p) for p in paths])
    code, out, err = diagnosed(capsys, *paths)
    assert code == 0 and err == "", err
    assert out == diagnosis_text(hang, ranks)
    return hang, ranks


def at_line(line: int, file: str = "/home/u/train.py", function: str = "main") -> StackFrame:
    """The user's line a dump's frames name (its source not on this machine: no code)."""
    return StackFrame(file, line, function, "", True)


def nccl(seq: int, completed: bool, numel: int = 272, op: str = "all_reduce", line: int = 30) -> EnteredCollective:
    """A collective of `dump`'s default group, as the dump is read back."""
    return EnteredCollective(
        "0", "default_pg", seq, op, [[numel]], ["Float"], completed, 1_795_748_100.0 + seq, at_line(line)
    )


def logged(entered: EnteredCollective) -> tuple:
    """What a watchdog line says of a collective (its time aside): the group, number, op and element count (where
    logged) of one not completed; no dtype, no line."""
    return entered.group, entered.seq, entered.op, entered.sizes, entered.dtypes, entered.completed, entered.site


def test_the_rank_that_never_arrived_from_a_folder_of_dumps(tmp_path, capsys):
    (tmp_path / "fr_rank_0").write_bytes(dump([(8, 272, "all_reduce", 30), (9, 272, "all_reduce", 30)], 8))
    (tmp_path / "fr_rank_1").write_bytes(dump([(7, 272, "all_reduce", 30), (8, 272, "all_reduce", 30)], 8))
    (tmp_path / "notes.txt").write_text("not a dump")
    hang, ranks = diagnosed_hang(capsys, tmp_path)
    assert ranks == 2 and isinstance(hang, Behind) and hang.ahead == nccl(9, False)
    (behind,), (waiting,) = hang.behind, hang.waiting
    assert (behind.rank, behind.stack, behind.inside, behind.steps_done) == (1, [], None, None)
    assert behind.collectives == [nccl(7, True), nccl(8, True)]  # its last: #8, called at line 30
    assert waiting.rank == 0 and waiting.inside == nccl(9, False)
    assert waiting.taken_s == (tmp_path / "fr_rank_0").stat().st_mtime  # it has waited since #9 began until then


def test_collectives_that_part_are_named_from_dumps(tmp_path, capsys):
    (tmp_path / "fr_rank_0").write_bytes(dump([(9, 4, "all_reduce", 28)], 8))
    (tmp_path / "fr_rank_1").write_bytes(dump([(9, 4, "broadcast", 28)], 8))
    hang, ranks = diagnosed_hang(capsys, tmp_path / "fr_rank_0", tmp_path / "fr_rank_1")
    assert ranks == 2 and hang == Parting(
        9, Side((0,), nccl(9, False, 4, line=28)), Side((1,), nccl(9, False, 4, "broadcast", 28)), "op", True
    )


def test_a_real_gloo_dump_reads(tmp_path, capsys):
    """torch 2.13's own dump of one Gloo rank (tests/data/flight_recorder/make_dump.py): an all_reduce, a barrier."""
    shutil.copy(REPO / "tests" / "data" / "flight_recorder" / "gloo_rank0_torch2.13.pickle", tmp_path / "fr_rank_0")
    hang, ranks = diagnosed_hang(capsys, tmp_path)
    assert ranks == 1 and isinstance(hang, Behind) and hang.ahead is None and hang.waiting == ()
    (rank0,) = hang.behind
    assert rank0.rank == 0 and rank0.inside is None and rank0.stack == []
    assert [(c.seq, c.op, c.completed) for c in rank0.collectives] == [(1, "all_reduce", True), (2, "barrier", True)]
    assert (rank0.collectives[-1].group_desc, rank0.collectives[-1].site.line) == ("default_pg", 10)


def test_a_dump_that_names_code_is_refused_in_one_line(tmp_path, capsys):
    class RunsCode:
        def __reduce__(self):
            return (print, ("this would run",))

    (tmp_path / "fr_rank_0").write_bytes(pickle.dumps({"entries": [RunsCode()]}))
    code, out, err = diagnosed(capsys, tmp_path)
    assert code == 2 and "this would run" not in out
    refused = f"{tmp_path / 'fr_rank_0'}: a dump names builtins.print: only plain data is read, nothing is run"
    assert err == f"error: {refused}; it is not read"


def test_nothing_to_read_says_how_to_make_a_job_leave_dumps(tmp_path, capsys):
    code, _, err = diagnosed(capsys, tmp_path)
    assert code == 2 and "TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE=" in err and len(err.splitlines()) == 1
    code, _, err = diagnosed(capsys, tmp_path / "missing")
    assert code == 2 and err == f"error: {tmp_path / 'missing'}: no such file or folder"


def watchdog_line(rank: int, seq: int, op: str, elements: int, waited_ms: int, second: int = 21) -> str:
    """NCCL's watchdog timeout as torch 2.5-2.13 logs it (ProcessGroupNCCL.cpp), with torchrun's rank prefix."""
    return (
        f"[rank{rank}]:[E1218 20:27:{second}.426415540 ProcessGroupNCCL.cpp:629] [Rank {rank}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={elements}, "
        f"NumelOut={elements}, Timeout(ms)=600000) ran for {waited_ms} milliseconds before timing out.\n"
    )


def test_the_rank_that_never_timed_out_from_a_jobs_log(tmp_path, capsys):
    """One SLURM output file of four ranks: three time out in all_reduce #31 (each line also quoted again in the
    exception it raises), rank 2 logged but has nothing pending: it never entered #31."""
    lines = [
        f"[rank{r}]:[I1218 20:17:00.000000000 ProcessGroupNCCL.cpp:900] [Rank {r}] ProcessGroupNCCL init\n"
        for r in range(4)
    ]
    for rank in (0, 1, 3):
        timeout = watchdog_line(rank, 31, "ALLREDUCE", 1_048_576, 600_000 + rank)
        lines += [
            timeout,
            f"[rank{rank}]:[E1218 20:27:21.5 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
            "Exception (either an error or timeout) detected by watchdog at work: 31, last enqueued NCCL work: 31, "
            "last completed NCCL work: 30.\n",
            "terminate called after throwing an instance of 'c10::DistBackendError'\n",
            f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated with "
            f"exception: {timeout.split('] ', 1)[1]}",
        ]
    (tmp_path / "slurm-4242.out").write_text("".join(lines))
    hang, ranks = diagnosed_hang(capsys, tmp_path)
    assert ranks == 4 and isinstance(hang, Behind) and hang.ahead is not None
    assert logged(hang.ahead) == ("0", 31, "all_reduce", [[1_048_576]], [], False, None)
    assert hang.ahead.group_desc == "default_pg"
    assert [(e.rank, e.collectives) for e in hang.behind] == [(2, [])]  # logged, nothing pending
    assert [e.rank for e in hang.waiting] == [0, 1, 3]
    assert hang.waiting[0].taken_s - hang.ahead.entered_s == pytest.approx(600.0)  # rank 0's 600,000 ms


def test_a_group_named_by_the_status_line_and_a_desync_from_the_watchdogs_sizes(tmp_path, capsys):
    """Older logs name the group only on the status line after the timeout; two ranks timed out at the same
    sequence number with different element counts: their collectives part there."""
    status = (
        "[rank{r}]:[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank {r}]  failure "
        "detected by watchdog at work sequence id: 12 PG status: last enqueued work: 12, last completed work: 11\n"
    )
    log = watchdog_line(0, 12, "ALLREDUCE", 1, 30_000) + status.format(r=0)
    log += watchdog_line(1, 12, "ALLREDUCE", 34_179, 30_000) + status.format(r=1)
    (tmp_path / "stderr.log").write_text(log)
    hang, ranks = diagnosed_hang(capsys, tmp_path / "stderr.log")
    assert ranks == 2 and isinstance(hang, Parting)
    assert (hang.seq, hang.mismatch, hang.lines_known) == (12, "shape", True)
    assert (hang.first.ranks, hang.second.ranks) == ((0,), (1,))
    assert logged(hang.first.call) == ("1", 12, "all_reduce", [[1]], [], False, None)
    assert logged(hang.second.call) == ("1", 12, "all_reduce", [[34_179]], [], False, None)
    assert hang.first.call.group_desc != "default_pg"  # the group the status line names: process group 1


def test_a_log_without_a_watchdog_timeout_is_no_evidence(tmp_path, capsys):
    (tmp_path / "train.log").write_text("[rank0]:[W1218 20:17:00.0 ProcessGroupNCCL.cpp:1] a warning\nloss 2.3\n")
    code, _, err = diagnosed(capsys, tmp_path)
    assert code == 2 and err.startswith(f"error: no Flight Recorder dump or hang account in {tmp_path}")


def test_an_older_watchdog_line_without_rank_prefix_stamp_or_sizes(tmp_path, capsys):
    """torch before 2.2: no `[rankN]:` prefix (the group's rank: the global one in the default group), no NumelIn,
    and here no glog time stamp: each rank's wait is what its line says."""
    line = (
        "[E ProcessGroupNCCL.cpp:458] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
        "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800313 milliseconds before timing out.\n"
    )
    (tmp_path / "job.log").write_text(line.format(r=0) + line.format(r=1))
    hang, ranks = diagnosed_hang(capsys, tmp_path)
    assert ranks == 2 and isinstance(hang, Behind) and hang.ahead is not None
    assert logged(hang.ahead) == ("0", 5, "all_reduce", [], [], False, None)  # no sizes logged
    assert hang.behind == () and [e.rank for e in hang.waiting] == [0, 1]
    assert [round(e.taken_s - hang.ahead.entered_s) for e in hang.waiting] == [1800, 1800]  # what each line says
