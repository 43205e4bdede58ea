"""End to end with the real parts: `luckrate demo` -> `luckrate serve` -> a real Prometheus on loopback.

Every PromQL expression in the Grafana dashboard and in the Prometheus rules must return data through
Prometheus's HTTP API once demo traffic has flowed: a misspelt metric or label, a panel that cannot move,
or a recording rule the dashboard depends on but Prometheus never evaluates fails here. Alert expressions
are checked operand by operand (their thresholds are the promtool unit tests' business), and the taint
alert must actually fire on the demo's tainted runs.

Prometheus comes from Debian's `prometheus` package (CI installs it). Both servers bind 127.0.0.1 on
free ports, use their own temporary config and data directories, and are stopped at the end.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
import yaml

from tests.builders import ROOT, SPEC
from tests.deploy.prometheus import get, run_prometheus, tainted_traces, wait_for
from tests.service.harness import Server

DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "luckrate.json"
RULES = ROOT / "deploy" / "prometheus" / "rules" / "luckrate.rules.yml"

pytestmark = pytest.mark.usefixtures("prometheus_binary")


# Grafana's template variables, replaced as Grafana would for "All agents" over the last hour.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__range": "1h", "$agent": ".*"}


@pytest.fixture(scope="module")
def luckrate(tmp_path_factory) -> Iterator[dict]:
    """A real `luckrate serve` on free loopback ports; yields its ports and verdict log path."""
    tmp = tmp_path_factory.mktemp("luckrate")
    verdicts = tmp / "verdicts.jsonl"
    flags = ("--root-grace", "0.2", "--idle-timeout", "3", "--verdict-log", str(verdicts))
    with Server(*flags, spec=SPEC) as server:
        try:
            yield {**server.ports, "verdicts": verdicts}
        finally:
            server.terminate()


@pytest.fixture(scope="module")
def prometheus(luckrate, tmp_path_factory) -> Iterator[str]:
    """A real Prometheus scraping luckrate every second and evaluating the repository's rules."""
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": [str(RULES)]}
    yield from run_prometheus(tmp_path_factory.mktemp("prometheus"), luckrate["prometheus"], config)


def _query(base: str, expr: str) -> list:
    body = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    if body is None:
        return []
    doc = json.loads(body)
    assert doc["status"] == "success", (expr, doc)
    return doc["data"]["result"]


@pytest.fixture(scope="module")
def traffic(luckrate, prometheus) -> dict:
    """Demo runs through the real OTLP/gRPC exporter, plus the faults the health panels count."""
    demo = subprocess.run(
        [
            sys.executable,
            "-m",
            "luckrate.cli",
            "demo",
            "--endpoint",
            f"127.0.0.1:{luckrate['grpc']}",
            "--rate",
            "40",
            "--runs",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    verdicts = wait_for("tainted traces in the verdict log", lambda: tainted_traces(luckrate["verdicts"]))
    http = f"http://127.0.0.1:{luckrate['http']}/v1/traces"
    _post_json(http, _span(verdicts[0], "00f067aa0ba902b7"))  # a span for a graded trace: late
    _post_json(http, _span("0" * 32, "00f067aa0ba902b8"))  # all-zero trace id: rejected span
    _post(http, b"{not json", "application/json")  # undecodable: refused request
    return {"demo": demo.stderr, "tainted": verdicts}


def _span(trace_id: str, span_id: str) -> dict:
    now = time.time_ns()
    return {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": span_id,
                                "name": "execute_tool lookup_order",
                                "kind": 1,
                                "startTimeUnixNano": str(now),
                                "endTimeUnixNano": str(now + 1000),
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                    {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup_order"}},
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }


def _post_json(url: str, doc: dict) -> int:
    return _post(url, json.dumps(doc).encode(), "application/json")


def _post(url: str, body: bytes, content_type: str) -> int:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def dashboard_expressions() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p.get("targets", ())]
    for name, value in GRAFANA_VARIABLES.items():
        exprs = [e.replace(name, value) for e in exprs]
    return exprs


def rule_expressions() -> list[str]:
    """Recording rules whole; alerting rules split into operands (comparisons dropped; ``absent(x)`` is
    empty by design while x exists, so x itself is checked)."""
    out = []
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            out += [rule["expr"].strip()] if "record" in rule else alert_operands(rule["expr"])
    return out


_SET_OP = re.compile(r"\s+(and|or|unless)(\s+(on|ignoring)\s*\([^)]*\))?\s+")
_COMPARISON = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*(bool\s+)?-?[0-9.e+]+\s*$")


def alert_operands(expr: str) -> list[str]:
    parts, depth, start = [], 0, 0
    text = " ".join(expr.split())
    i = 0
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        m = _SET_OP.match(text, i) if depth == 0 else None
        if m:
            parts.append(text[start:i])
            start = i = m.end()
            continue
        i += 1
    parts.append(text[start:])
    operands = [_COMPARISON.sub("", p).strip() for p in parts]
    return [o[len("absent(") : -1] if o.startswith("absent(") else o for o in operands]


def test_alert_operands_split_at_top_level_only() -> None:
    expr = "sum by (a) (x unless x offset 10m) > 0 or absent(y)\n and on (a) z >= 20"
    assert alert_operands(expr) == ["sum by (a) (x unless x offset 10m)", "y", "z"]


def test_every_expression_is_covered() -> None:
    # The lists the e2e test walks are not empty and contain the Luck Rate and taint expressions.
    assert len(dashboard_expressions()) >= 15 and len(rule_expressions()) >= 10
    assert any("luckrate_taint_total" in e for e in dashboard_expressions())
    assert "agent:luckrate_luck_rate:ratio_rate5m" in " ".join(dashboard_expressions())


@pytest.mark.parametrize("expr", dashboard_expressions() + rule_expressions())
def test_expression_returns_data(expr: str, prometheus: str, traffic: dict) -> None:
    result = wait_for(f"data for {expr!r}", lambda: _query(prometheus, expr))
    assert result


def test_taint_alert_fires_on_demo_traffic(prometheus: str, traffic: dict) -> None:
    def firing() -> list:
        body = get(f"{prometheus}/api/v1/alerts")
        alerts = json.loads(body)["data"]["alerts"] if body else []
        return [a for a in alerts if a["labels"]["alertname"] == "LuckrateTaint" and a["state"] == "firing"]

    alerts = wait_for("LuckrateTaint to fire", firing)
    assert {(a["labels"]["privileged_tool"], a["labels"]["source_tool"]) for a in alerts} == {
        ("send_email", "fetch_webpage")
    }


def test_taint_count_matches_the_demo_mix(prometheus: str, traffic: dict, luckrate: dict) -> None:
    # 40 runs = 4 passes of the 10-run cycle, one tainted run each; the verdict log names them all.
    expr = "sum(luckrate_taint_total)"
    wait_for("4 taint findings", lambda: [r for r in _query(prometheus, expr) if float(r["value"][1]) == 4])
    assert len(set(tainted_traces(luckrate["verdicts"]))) == 4
