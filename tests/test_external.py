"""A missing external part skips with the command that installs it, and fails under LUCKRATE_TEST_REQUIRE_ALL."""

import pytest

from tests import external


@pytest.mark.parametrize("value, fails", [("", False), ("0", False), ("1", True), ("yes", True)])
def test_a_missing_part_skips_unless_every_part_is_required(monkeypatch, value, fails):
    monkeypatch.setenv(external.REQUIRE_ALL, value)
    expected = pytest.fail.Exception if fails else pytest.skip.Exception
    with pytest.raises(expected) as raised:
        external.missing("prometheus", "apt-get install -y prometheus")
    assert "prometheus is not installed; install it with: apt-get install -y prometheus" in str(raised.value)
    assert (external.REQUIRE_ALL in str(raised.value)) is fails
