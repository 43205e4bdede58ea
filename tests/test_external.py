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


def test_ci_runs_the_readme_test_command_with_every_external_part_required():
    """.ci/run installs every external part, so there a missing one must fail the run, not skip."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme_command = next(line for line in (root / "README.md").read_text().splitlines() if "pytest" in line)
    ci = (root / ".ci" / "run").read_text().splitlines()
    assert f"export {external.REQUIRE_ALL}=1" in ci[: ci.index(readme_command)]
