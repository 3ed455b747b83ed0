"""The suite's fixtures and hooks (tests/conftest.py), for the controls run on demand here; and the job over two
hosts the multi-host suite shares (tests/test_multihost.two_hosts)."""

from tests.conftest import *  # noqa: F403
from tests.test_multihost import two_hosts  # noqa: F401
