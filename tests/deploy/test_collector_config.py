"""The collector configs in collector-config/ are structurally sound and point at luckrate's real ports.

No collector binary can be installed here (it is a Go program shipped as a container image or release
archive; CI has neither Docker nor network access beyond package registries), so this test stands in for
`otelcol-contrib validate`: every component used in a pipeline is defined, every defined component is one
the contrib distribution ships, and every endpoint aimed at luckrate uses a port luckrate listens on by
default (read from luckrate's own ServiceConfig, so a changed default breaks this test).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from luckrate.service.config import ServiceConfig


ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "collector-config").glob("*.yaml"))
KINDS = ("receivers", "processors", "exporters", "connectors", "extensions")

# Component types of opentelemetry-collector-contrib v0.120.0 that these files use, from the
# distribution's manifest (open-telemetry/opentelemetry-collector-releases, distributions/otelcol-contrib).
# Hand-written: a new component in a config must be checked against that manifest and added here.
CONTRIB = {
    "receivers": {"otlp"},
    "processors": {"batch", "memory_limiter"},
    "exporters": {"otlp", "otlphttp", "prometheus", "loadbalancing", "debug"},
    "extensions": {"health_check"},
    "connectors": set(),
}

DEFAULTS = ServiceConfig()


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def _luckrate_ports(config: dict) -> list[tuple[str, int]]:
    """(where, port) for every exporter aimed at luckrate: otlp exporters named for luckrate and every
    loadbalancing resolver (whose backends are luckrate replicas)."""
    found = []
    for cid, body in (config.get("exporters") or {}).items():
        body = body or {}
        if _type(cid) == "otlp" and "luckrate" in cid:
            found.append((f"exporters.{cid}.endpoint", _port(body["endpoint"])))
        if _type(cid) == "loadbalancing":
            resolver = body["resolver"]
            if "dns" in resolver:
                found.append((f"exporters.{cid}.resolver.dns.port", int(resolver["dns"]["port"])))
            for port in (resolver.get("k8s") or {}).get("ports", ()):
                found.append((f"exporters.{cid}.resolver.k8s.ports", int(port)))
            for host in (resolver.get("static") or {}).get("hostnames", ()):
                found.append((f"exporters.{cid}.resolver.static.hostnames", _port(host)))
    return found


@pytest.fixture(params=CONFIGS, ids=lambda p: p.name)
def config(request) -> dict:
    return _load(request.param)


def test_both_configs_exist() -> None:
    assert {p.name for p in CONFIGS} >= {"otelcol.yaml", "otelcol-loadbalancing.yaml"}


def test_every_pipeline_component_is_defined(config: dict) -> None:
    pipelines = config["service"]["pipelines"]
    assert pipelines, "no pipelines"
    missing = [
        f"{name}.{kind}: {cid}"
        for name, pipeline in pipelines.items()
        for kind in ("receivers", "processors", "exporters")
        for cid in pipeline.get(kind, ())
        if cid not in (config.get(kind) or {}) and cid not in (config.get("connectors") or {})
    ]
    missing += [
        f"service.extensions: {e}"
        for e in config["service"].get("extensions", ())
        if e not in (config.get("extensions") or {})
    ]
    assert missing == []


def test_every_component_ships_in_contrib(config: dict) -> None:
    unknown = [f"{kind}.{cid}" for kind in KINDS for cid in (config.get(kind) or {}) if _type(cid) not in CONTRIB[kind]]
    assert unknown == []


def test_every_pipeline_has_a_receiver_and_an_exporter(config: dict) -> None:
    for name, pipeline in config["service"]["pipelines"].items():
        assert pipeline.get("receivers") and pipeline.get("exporters"), name


def test_traces_reach_luckrate_on_its_default_grpc_port(config: dict) -> None:
    # luckrate behind the otlp/loadbalancing exporters must serve OTLP/gRPC (the loadbalancing exporter
    # speaks only gRPC), so every luckrate port must be luckrate's default gRPC port.
    ports = _luckrate_ports(config)
    traces_exporters = config["service"]["pipelines"]["traces"]["exporters"]
    assert any("luckrate" in e or _type(e) == "loadbalancing" for e in traces_exporters), traces_exporters
    assert ports, "no exporter aimed at luckrate"
    assert [(where, p) for where, p in ports if p != DEFAULTS.grpc.port] == []


def test_loadbalancing_routes_by_trace_id() -> None:
    config = _load(ROOT / "collector-config" / "otelcol-loadbalancing.yaml")
    balancers = {cid: body for cid, body in config["exporters"].items() if _type(cid) == "loadbalancing"}
    assert {next(iter(b["resolver"])) for b in balancers.values()} == {"dns", "k8s"}
    assert {b["routing_key"] for b in balancers.values()} == {"traceID"}
    assert all("endpoint" not in b["protocol"]["otlp"] for b in balancers.values()), "endpoint is per replica"


def test_metrics_pipeline_hands_luckrate_metrics_to_prometheus(config: dict) -> None:
    metrics = config["service"]["pipelines"]["metrics"]
    assert "otlp" in metrics["receivers"]
    assert any(_type(e) in ("prometheus", "prometheusremotewrite") for e in metrics["exporters"])


def test_prometheus_scrapes_luckrate_on_its_default_port() -> None:
    scrape = _load(ROOT / "deploy" / "prometheus" / "prometheus.yml")
    job = next(j for j in scrape["scrape_configs"] if j["job_name"] == "luckrate")
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    assert targets and {_port(t) for t in targets} == {DEFAULTS.prometheus.port}


@pytest.mark.parametrize(
    "bad, problem",
    [
        (
            {
                "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["otlp/luckrate"]}}},
                "receivers": {"otlp": {}},
                "exporters": {"otlp/luckrate": {"endpoint": "luckrate:4318"}},
            },
            "port",
        ),
        (
            {
                "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["otlp/luckrate"]}}},
                "receivers": {"otlp": {}},
                "exporters": {},
            },
            "undefined",
        ),
    ],
)
def test_the_checks_catch_broken_configs(bad: dict, problem: str) -> None:
    # Guards the guard: a wrong port (the HTTP one) and an undefined exporter are both reported.
    if problem == "port":
        with pytest.raises(AssertionError):
            test_traces_reach_luckrate_on_its_default_grpc_port(bad)
    else:
        with pytest.raises(AssertionError):
            test_every_pipeline_component_is_defined(bad)


def test_log_records_reach_luckrate_beside_their_traces(config: dict) -> None:
    """A logs pipeline sends log records to luckrate by the way traces go (the same luckrate exporter, or the
    same trace-id load balancer), so a trace's records reach the replica that grades it."""
    pipelines = config["service"]["pipelines"]
    logs = pipelines["logs"]
    assert "otlp" in logs["receivers"]
    to_luckrate = {e for e in pipelines["traces"]["exporters"] if "luckrate" in e or _type(e) == "loadbalancing"}
    assert to_luckrate and to_luckrate <= set(logs["exporters"])
