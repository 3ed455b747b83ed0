"""The desyncs the suite leaves out (issue 71, item 3): a shape that differs at the same call, and the larger piece on
rank 1 (the suite keeps it on rank 0, tests/test_collectives_part.py). On demand:

    python -m pytest benchmarks/check/controls/test_desync_controls.py -p no:cacheprovider"""

import pytest

from tests.test_collectives_part import named_by_kind

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("kind", ["shape", "size1"])
def test_a_desync_is_named_by_kind_with_the_scripts_line(tmp_path, kind):
    named_by_kind(tmp_path, kind)
