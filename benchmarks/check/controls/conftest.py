"""The suite's fixtures and hooks (tests/conftest.py), for the controls run on demand here."""

from tests.conftest import *  # noqa: F403
