"""Fixtures for the deploy tests."""

from __future__ import annotations

import shutil

import pytest

from tests import external


@pytest.fixture(scope="module")
def prometheus_binary() -> None:
    """Debian's ``prometheus`` (CI installs it): the modules that run one use this fixture."""
    if shutil.which("prometheus") is None:
        external.missing("prometheus", "apt-get install -y prometheus")
