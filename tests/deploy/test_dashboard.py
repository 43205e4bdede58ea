"""The Grafana dashboard works in any Grafana, not only the compose one.

Regression: every query named the compose Prometheus by its provisioned uid ("prometheus"); imported into
an existing Grafana, whose Prometheus has another uid, every panel had no datasource. Queries now go
through a datasource variable, which the import form fills from ``__inputs`` and the compose Grafana
resolves to its default Prometheus.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = json.loads((DEPLOY / "grafana" / "dashboards" / "luckrate.json").read_text())


def _datasource_refs(node, path="") -> list[tuple[str, dict]]:
    if isinstance(node, dict):
        found = [(path, node["datasource"])] if isinstance(node.get("datasource"), dict) else []
        return found + [r for k, v in node.items() if k != "datasource" for r in _datasource_refs(v, f"{path}.{k}")]
    if isinstance(node, list):
        return [r for i, v in enumerate(node) for r in _datasource_refs(v, f"{path}[{i}]")]
    return []


def test_every_prometheus_query_goes_through_the_datasource_variable() -> None:
    refs = [(where, ref) for where, ref in _datasource_refs(DASHBOARD) if ref.get("type") == "prometheus"]
    assert len(refs) >= 15
    assert [where for where, ref in refs if ref.get("uid") != "${datasource}"] == []


def test_the_datasource_variable_is_filled_on_import() -> None:
    var = next(v for v in DASHBOARD["templating"]["list"] if v["name"] == "datasource")
    assert (var["type"], var["query"]) == ("datasource", "prometheus")
    (inp,) = [i for i in DASHBOARD["__inputs"] if i["pluginId"] == "prometheus"]
    assert inp["type"] == "datasource" and var["current"]["value"] == "${" + inp["name"] + "}"


def test_the_compose_grafana_resolves_it_to_its_prometheus() -> None:
    # Provisioned (no import form), an unknown current value falls back to the default of the variable's type.
    sources = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    (prometheus,) = [d for d in sources["datasources"] if d["type"] == "prometheus"]
    assert prometheus["isDefault"] is True


RULES = DEPLOY / "prometheus" / "rules" / "luckrate.rules.yml"
PRODUCTION_DOC = DEPLOY.parent / "docs" / "production.md"
_RECORDED = re.compile(r"\b[a-z_]*:[a-z_]+:[a-z0-9_]+\b")
"""A recording rule's name (``level:metric:operations``); raw metric names have no colon."""


def _rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def _panels_reading(pattern: re.Pattern[str]) -> list[dict]:
    return [p for p in DASHBOARD["panels"] if any(pattern.search(t["expr"]) for t in p.get("targets", ()))]


def test_every_recording_rule_the_dashboard_reads_is_in_the_rules_file() -> None:
    recorded = {r["record"] for r in _rules() if "record" in r}
    used = {
        m for t in (t for p in DASHBOARD["panels"] for t in p.get("targets", ())) for m in _RECORDED.findall(t["expr"])
    }
    assert used and used <= recorded


def test_panels_on_recording_rules_say_they_need_the_rules_file() -> None:
    # Imported into a Grafana whose Prometheus lacks the rules, these panels are empty: they must say why.
    panels = _panels_reading(_RECORDED)
    assert len(panels) >= 2
    assert [p["title"] for p in panels if "luckrate.rules.yml" not in p["description"]] == []


def test_the_import_steps_name_the_rules_file() -> None:
    text = PRODUCTION_DOC.read_text()
    step = text[text.index("Dashboards → New → Import") :].split("\n- ", 1)[0]
    assert "deploy/grafana/dashboards/luckrate.json" in text and "luckrate.rules.yml" in step


def _alert_metrics() -> set[str]:
    exprs = " ".join(r["expr"] for r in _rules() if "alert" in r)
    return set(re.findall(r"\bluckrate_[a-z_]+_total\b", exprs))


@pytest.mark.parametrize("metric", sorted(_alert_metrics()))
def test_every_counter_an_alert_reads_has_a_panel(metric: str) -> None:
    # An alert's operator opens the dashboard next: the series that fired it must be on it.
    assert _panels_reading(re.compile(rf"\b{metric}\b"))
