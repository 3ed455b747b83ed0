"""`commprof diagnose`: the same sentence as a failed run, from the Flight Recorder dumps of a job commprof did not
launch (one pickle per rank, as torch writes them), read as data only."""

import pickle
import shutil

import pytest

from commprof.cli.app import main
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


def test_the_rank_that_never_arrived_from_a_folder_of_dumps(tmp_path, capsys):
    (tmp_path / "fr_rank_0").write_bytes(dump([(8, 272, "all_reduce", 30), (9, 272, "all_reduce", 30)], 8))
    (tmp_path / "fr_rank_1").write_bytes(dump([(7, 272, "all_reduce", 30), (8, 272, "all_reduce", 30)], 8))
    (tmp_path / "notes.txt").write_text("not a dump")
    code, out, err = diagnosed(capsys, tmp_path)
    assert code == 0, err
    assert out.startswith(
        "rank 1 is outside any collective; its last was all_reduce #8 of the default group at train.py:30 in main; "
        "rank 0 has waited "
    ), out
    assert "in all_reduce #9 of the default group (1 tensor of 272 Float, 1.1 KB) at train.py:30 in main" in out
    assert out.endswith("(from 2 ranks' evidence)")


def test_collectives_that_part_are_named_from_dumps(tmp_path, capsys):
    (tmp_path / "fr_rank_0").write_bytes(dump([(9, 4, "all_reduce", 28)], 8))
    (tmp_path / "fr_rank_1").write_bytes(dump([(9, 4, "broadcast", 28)], 8))
    code, out, _ = diagnosed(capsys, tmp_path / "fr_rank_0", tmp_path / "fr_rank_1")
    assert code == 0 and out.startswith("the ranks' collectives part at #9 of the default group: rank 0 ran all_reduce")
    assert "different collectives at the same position" in out


def test_a_real_gloo_dump_reads(tmp_path, capsys):
    """torch 2.13's own dump of one Gloo rank (tests/data/flight_recorder/make_dump.py): an all_reduce, a barrier."""
    shutil.copy(REPO / "tests" / "data" / "flight_recorder" / "gloo_rank0_torch2.13.pickle", tmp_path / "fr_rank_0")
    code, out, err = diagnosed(capsys, tmp_path)
    assert code == 0, err
    assert out.startswith("rank 0 is outside any collective; its last was barrier #2 of the default group"), out


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
