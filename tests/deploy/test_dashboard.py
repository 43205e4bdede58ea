"""The Grafana dashboard works in any Grafana, not only the compose one.

Regression: every query named the compose Prometheus by its provisioned uid ("prometheus"); imported into
an existing Grafana, whose Prometheus has another uid, every panel had no datasource. Queries now go
through a datasource variable, which the import form fills from ``__inputs`` and the compose Grafana
resolves to its default Prometheus.
"""

from __future__ import annotations

import json
from pathlib import Path

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
