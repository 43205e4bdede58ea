"""The click path from a taint alert to the trace is wired through every file it crosses: the collector sends
traces to the compose Tempo, Prometheus keeps exemplars, Grafana knows Tempo by the uid the dashboard's
trace_source variable and the Prometheus datasource's exemplar link use, and the Luck Rate and taint panels
ask for exemplars and link their trace_id to the trace data source.

No Grafana, Tempo or Docker runs here, so these are structural checks (like test_manifests.py); that
Prometheus really stores luckrate's exemplars is tests/deploy/test_e2e_exemplars.py's business."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml


ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DASHBOARD = json.loads((DEPLOY / "grafana" / "dashboards" / "luckrate.json").read_text())
PANELS = {p["title"]: p for p in DASHBOARD["panels"]}
EXEMPLAR_PANELS = ("Luck Rate per agent (5m)", "Taint findings over time")


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _datasources() -> dict[str, dict]:
    found = {}
    for path in (DEPLOY / "grafana" / "provisioning" / "datasources").glob("*.yaml"):
        for ds in _yaml(path)["datasources"]:
            found[ds["uid"]] = ds
    return found


def _variable(name: str) -> dict:
    return next(v for v in DASHBOARD["templating"]["list"] if v["name"] == name)


def test_trace_source_variable_defaults_to_the_provisioned_tempo() -> None:
    var = _variable("trace_source")
    assert (var["type"], var["query"]) == ("datasource", "tempo")
    assert _datasources()[var["current"]["value"]]["type"] == "tempo"


def test_prometheus_datasource_sends_exemplar_trace_ids_to_tempo() -> None:
    sources = _datasources()
    (dest,) = sources["prometheus"]["jsonData"]["exemplarTraceIdDestinations"]
    assert dest["name"] == "trace_id" and sources[dest["datasourceUid"]]["type"] == "tempo"


@pytest.mark.parametrize("title", EXEMPLAR_PANELS)
def test_panels_ask_for_exemplars_and_link_them_by_trace_id(title: str) -> None:
    panel = PANELS[title]
    exemplar_exprs = [t["expr"] for t in panel["targets"] if t.get("exemplar")]
    # Exemplars live on raw counter series, not on recording rules.
    assert exemplar_exprs and all("luckrate_" in e and ":" not in e.split("{")[0] for e in exemplar_exprs)
    links = [
        link
        for o in panel["fieldConfig"]["overrides"]
        if o["matcher"] == {"id": "byName", "options": "trace_id"}
        for prop in o["properties"]
        if prop["id"] == "links"
        for link in prop["value"]
    ]
    assert links and all("${trace_source}" in link["url"] and "${__value.raw}" in link["url"] for link in links)


def test_compose_runs_tempo_and_prometheus_keeps_exemplars() -> None:
    services = _yaml(DEPLOY / "docker-compose.yaml")["services"]
    assert "--enable-feature=exemplar-storage" in services["prometheus"]["command"]
    assert services["tempo"]["image"].startswith("grafana/tempo:")
    assert "tempo" in services["collector"]["depends_on"] and "tempo" in services["grafana"]["depends_on"]
    url = _datasources()["tempo"]["url"]
    tempo = _yaml(DEPLOY / "tempo" / "tempo.yaml")
    assert url == f"http://tempo:{tempo['server']['http_listen_port']}"


def test_collector_sends_traces_to_tempo_on_its_otlp_port() -> None:
    collector = _yaml(ROOT / "collector-config" / "otelcol.yaml")
    assert "otlp/tempo" in collector["service"]["pipelines"]["traces"]["exporters"]
    host, port = collector["exporters"]["otlp/tempo"]["endpoint"].rsplit(":", 1)
    receiver = _yaml(DEPLOY / "tempo" / "tempo.yaml")["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]
    assert host == "tempo" and receiver["endpoint"].endswith(f":{port}")
