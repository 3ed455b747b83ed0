"""No traceback reaches a user (issue 53): anything that escapes a command, commprof's own bug included, ends in one
line naming the error and the file that keeps its traceback, with exit code 1."""

import re
from pathlib import Path

from commprof.cli import app


def test_an_unexpected_error_is_one_line_with_the_file_that_keeps_its_traceback(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise AttributeError("'DDPOptions' object has no attribute 'reduce_bucket_size'")

    monkeypatch.setattr("commprof.commands.diff.diff", broken)
    assert app.guarded_main(["diff", "a", "b"]) == 1
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(
        "error: commprof failed: AttributeError: 'DDPOptions' object has no attribute 'reduce_bucket_size' (a bug in "
        "commprof; its traceback is in "
    )
    kept = Path(re.search(r"traceback is in (\S+\.log)\)", lines[0]).group(1))
    text = kept.read_text()
    assert text.startswith("Traceback (most recent call last):") and "in broken" in text
    kept.unlink()
