"""External parts a test needs that ``pip install -e '.[test]'`` does not bring (a binary, npm packages).

On a developer's machine a missing part *skips* the test, naming what is missing and the command that
installs it. CI installs every part and sets ``LUCKRATE_TEST_REQUIRE_ALL=1`` (``.ci/run``), which turns
every such skip into a failure: a green CI run has run them all.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_ALL = "LUCKRATE_TEST_REQUIRE_ALL"
"""Set (to anything but empty or ``0``) to fail instead of skipping when an external part is missing."""


def required() -> bool:
    """Every external part must be present (CI)."""
    return os.environ.get(REQUIRE_ALL, "") not in ("", "0")


def missing(what: str, install: str) -> None:
    """Skip the calling test (fail it under ``LUCKRATE_TEST_REQUIRE_ALL``): ``what`` is not installed, and
    ``install`` is the command that installs it."""
    message = f"{what} is not installed; install it with: {install}"
    if required():
        pytest.fail(f"{message} ({REQUIRE_ALL} is set, so every external part must be present)", pytrace=False)
    pytest.skip(message)
