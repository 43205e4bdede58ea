"""The Prometheus rules pass `promtool check rules` and their unit tests (deploy/prometheus/tests/).

The unit tests are where the alert behaviour is pinned: taint fires (also on a brand-new series), clean
traffic stays quiet, the Luck Rate alert needs its minimum number of runs, rejected and missing spans warn.
promtool comes from Debian's `prometheus` package, which CI installs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import external

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULES = sorted((PROMETHEUS / "rules").glob("*.yml"))
UNIT_TESTS = sorted((PROMETHEUS / "tests").glob("*.yml"))
ALERTS = (
    "LuckrateTaint",
    "LuckrateLuckRateHigh",
    "LuckrateRejectingSpans",
    "LuckrateNoSpans",
    "LuckrateWriteAheadLogDamaged",
    "LuckrateGradeErrors",
    "LuckrateTracesUngraded",
    "LuckrateSpansLost",
)

promtool = shutil.which("promtool")


@pytest.fixture
def needs_promtool() -> None:
    if promtool is None:
        external.missing("promtool", "apt-get install -y prometheus")


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.usefixtures("needs_promtool")
@pytest.mark.parametrize("path", RULES, ids=lambda p: p.name)
def test_rules_are_valid(path: Path) -> None:
    done = _run("check", "rules", path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.usefixtures("needs_promtool")
@pytest.mark.parametrize("path", UNIT_TESTS, ids=lambda p: p.name)
def test_rule_unit_tests_pass(path: Path) -> None:
    done = _run("test", "rules", path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.usefixtures("needs_promtool")
def test_prometheus_config_is_valid() -> None:
    done = _run("check", "config", "--syntax-only", PROMETHEUS / "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("alert", ALERTS)
def test_every_alert_has_a_firing_unit_test(alert: str) -> None:
    # A rule with no test that expects it to fire could be dead (a typo in a metric name never fires).
    fired = set()
    for path in UNIT_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", ()):
                if check.get("exp_alerts"):
                    fired.add(check["alertname"])
    assert alert in fired


def test_every_alert_in_the_rules_is_listed_above() -> None:
    # A new alert joins ALERTS, and so gets the firing-test check above.
    alerts = {
        r["alert"] for p in RULES for g in yaml.safe_load(p.read_text())["groups"] for r in g["rules"] if "alert" in r
    }
    assert alerts == set(ALERTS)


@pytest.mark.usefixtures("needs_promtool")
def test_a_broken_unit_test_fails(tmp_path: Path) -> None:
    # Guards the guard: promtool must report a wrong expectation, or the tests above prove nothing.
    text = UNIT_TESTS[0].read_text()
    broken = text.replace("value: 0.3\n", "value: 0.4\n", 1).replace("../rules/", f"{PROMETHEUS / 'rules'}/")
    assert "value: 0.4\n" in broken
    copy = tmp_path / "broken.yml"
    copy.write_text(broken)
    done = _run("test", "rules", copy)
    assert done.returncode != 0 and "ratio_rate5m" in done.stdout + done.stderr
