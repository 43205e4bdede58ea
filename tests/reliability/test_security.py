"""Security of the real server: TLS and mutual TLS with certificates made by the test, bearer tokens,
request size limits, bounded metric cardinality under 100,000 attacker-chosen names, a bounded verdict
log, and JSON specs that never execute anything."""

from __future__ import annotations

import http.client
import json
import random
import ssl
import subprocess
import sys
import urllib.request

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from luckrate.core.spec import InvalidSpec
from luckrate.core.spec_loader import load_specs
from tests.reliability.harness import fresh_request, identity, raw_span, report, request_with, settled, span_count
from tests.reliability.load import EXPORT
from tests.service.harness import ROOT, Server, post, total

PROTOBUF = "application/x-protobuf"


def _https(server, body: bytes, pki, client: str | None = None) -> int:
    ctx = ssl.create_default_context(cafile=str(pki["ca"]))
    if client:
        ctx.load_cert_chain(*map(str, pki[client]))
    req = urllib.request.Request(
        f"https://127.0.0.1:{server.ports['http']}/v1/traces",
        data=body,
        method="POST",
        headers={"Content-Type": PROTOBUF},
    )
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        return r.status


def _grpc_tls(server, body: bytes, pki, client: str | None = None) -> grpc.StatusCode:
    key = cert = None
    if client:
        cert, key = (p.read_bytes() for p in pki[client])
    creds = grpc.ssl_channel_credentials(
        root_certificates=pki["ca"].read_bytes(), private_key=key, certificate_chain=cert
    )
    with grpc.secure_channel(server.grpc, creds) as ch:
        try:
            ch.unary_unary(EXPORT)(body, timeout=10)
            return grpc.StatusCode.OK
        except grpc.RpcError as e:
            return e.code()


def _grpc_plain(server, body: bytes, metadata=None) -> tuple[grpc.StatusCode, tuple]:
    with grpc.insecure_channel(server.grpc) as ch:
        try:
            ch.unary_unary(EXPORT)(body, timeout=10, metadata=metadata)
            return grpc.StatusCode.OK, ()
        except grpc.RpcError as e:
            return e.code(), tuple(e.trailing_metadata() or ())


def test_tls_on_both_receivers(pki):
    rng = random.Random(1)
    cert, key = pki["server"]
    with Server("--root-grace", "0.2", "--tls-cert", str(cert), "--tls-key", str(key)) as server:
        req = fresh_request(rng)
        body = req.SerializeToString()
        assert _https(server, body, pki) == 200
        assert _grpc_tls(server, body, pki) is grpc.StatusCode.OK
        # Plain text to a TLS port gets no service.
        with pytest.raises((OSError, http.client.HTTPException)):  # a reset, or no HTTP status line
            post(server.http + "/v1/traces", body, PROTOBUF)
        assert _grpc_plain(server, body)[0] is grpc.StatusCode.UNAVAILABLE
        s = settled(server)
        identity(s)
        assert total(s, "luckrate_spans_received_total") == 2 * span_count(req)


def test_tls_connection_over_the_cap_gets_a_503_over_tls(pki):
    """Over the HTTP connection cap the 503 is sent after the TLS handshake (plain text would be noise to
    a TLS client), and counted."""
    import socket

    cert, key = pki["server"]
    with Server("--tls-cert", str(cert), "--tls-key", str(key), "--http-max-connections", "1") as server:
        holder = socket.create_connection(("127.0.0.1", server.ports["http"]), timeout=10)  # takes the one slot
        with holder:
            with pytest.raises(urllib.error.HTTPError) as e:
                _https(server, fresh_request(random.Random(3)).SerializeToString(), pki)
        assert (e.value.code, e.value.headers["Retry-After"]) == (503, "5")
        assert total(server.scrape(), "luckrate_requests_refused_total", reason="connection_limit") == 1


def test_mutual_tls_lets_in_only_clients_the_ca_signed(pki):
    rng = random.Random(2)
    cert, key = pki["server"]
    with Server(
        "--root-grace", "0.2", "--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(pki["ca"])
    ) as server:
        req = fresh_request(rng)
        body = req.SerializeToString()
        for client in (None, "rogue"):
            with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
                _https(server, body, pki, client)
            assert _grpc_tls(server, body, pki, client) is grpc.StatusCode.UNAVAILABLE
        assert _https(server, body, pki, "client") == 200
        assert _grpc_tls(server, body, pki, "client") is grpc.StatusCode.OK
        s = settled(server)
        identity(s)
        assert total(s, "luckrate_spans_received_total") == 2 * span_count(req)  # only the signed client's
        assert total(s, "luckrate_runs_total") == 1


def test_wrong_bearer_token_is_refused_and_nothing_is_graded(tmp_path):
    rng = random.Random(3)
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    with Server("--root-grace", "0.2", "--bearer-token-file", str(token)) as server:
        body = fresh_request(rng).SerializeToString()
        refused = 0
        for header in (None, "Bearer wrong", "Bearer s3cret-token-but-longer", "Basic s3cret-token", "s3cret-token"):
            status, headers, _ = post(
                server.http + "/v1/traces", body, PROTOBUF, {"Authorization": header} if header else {}
            )
            assert status == 401 and headers["WWW-Authenticate"] == "Bearer"
            code, _ = _grpc_plain(server, body, (("authorization", header),) if header else None)
            assert code is grpc.StatusCode.UNAUTHENTICATED
            refused += 2
        s = server.scrape()
        assert total(s, "luckrate_requests_refused_total", reason="unauthenticated") == refused
        assert total(s, "luckrate_spans_received_total") == 0
        good = fresh_request(rng)
        status, _, _ = post(
            server.http + "/v1/traces", good.SerializeToString(), PROTOBUF, {"Authorization": "Bearer s3cret-token"}
        )
        assert status == 200
        s = settled(server)
        assert total(s, "luckrate_spans_received_total") == span_count(good)
        assert total(s, "luckrate_runs_total") == 1  # the refused traces were never graded
        report("security.unauthenticated_refused", refused)


def test_request_size_limits_refuse_without_retry():
    import gzip
    import http.client

    limit = 100_000
    with Server("--max-request-bytes", str(limit)) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.ports["http"], timeout=10)
        conn.putrequest("POST", "/v1/traces")
        conn.putheader("Content-Type", PROTOBUF)
        conn.putheader("Content-Length", str(limit + 1))
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 413 and resp.getheader("Retry-After") is None
        conn.close()
        # urllib writes the whole body before it reads: the server reads and discards it (lingering close)
        # so the client sees the 413, not a broken pipe. 16 MiB is past every socket buffer.
        status, headers, _ = post(server.http + "/v1/traces", b"\x00" * (16 * 1024 * 1024), PROTOBUF)
        assert status == 413 and headers["Retry-After"] is None
        status, headers, _ = post(
            server.http + "/v1/traces", gzip.compress(b"\x00" * (limit * 50)), PROTOBUF, {"Content-Encoding": "gzip"}
        )
        assert status == 413 and headers["Retry-After"] is None
        code, trailers = _grpc_plain(server, b"\x0a" * (limit + 10))
        assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
        for key, value in trailers:  # no RetryInfo: the client must not retry an oversized request
            if key == "grpc-status-details-bin":
                for detail in status_pb2.Status.FromString(value).details:
                    assert not detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR)
        assert total(server.scrape(), "luckrate_spans_received_total") == 0


# ---- cardinality and the verdict log --------------------------------------------------------------

NAMES_PER_TRACE = 50
TRACES = 2000
"""2,000 traces x 50 = 100,000 distinct agent names and 100,000 distinct tool names."""


def _attacker_trace(rng: random.Random, n: int, huge: bool = False) -> list:
    t = rng.randbytes(16)
    spans, parent = [], b""
    for i in range(NAMES_PER_TRACE):
        agent_id = rng.randbytes(8)
        agent = "A" * 100_000 if huge and i == 0 else f"agent-{n}-{i}"
        spans.append(
            raw_span(
                t,
                agent_id,
                parent,
                name=f"invoke_agent {n}-{i}",
                start=10**9 + i,
                end=10**10 - i,
                attrs=(("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", agent)),
            )
        )
        tool = "T" * 100_000 if huge else f"tool-{n}-{i}"
        spans.append(
            raw_span(
                t,
                rng.randbytes(8),
                agent_id,
                name=f"execute_tool {n}-{i}",
                start=10**9 + 2 * i,
                end=10**9 + 2 * i + 1,
                attrs=(("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", tool)),
            )
        )
        parent = agent_id
    return spans


def _series(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def _label_values(samples: dict, label: str) -> set[str]:
    return {dict(ls)[label] for (_, ls) in samples if label in dict(ls)}


def test_cardinality_stays_bounded_under_100k_attacker_names(tmp_path):
    rng = random.Random(5)
    log = tmp_path / "verdicts.jsonl"
    with Server("--root-grace", "0.2", "--verdict-log", str(log)) as server:
        metrics_url = f"http://127.0.0.1:{server.ports['prometheus']}/metrics"
        sent = 0
        with grpc.insecure_channel(server.grpc, options=[("grpc.max_send_message_length", 2**26)]) as ch:
            export = ch.unary_unary(EXPORT)
            for batch in range(TRACES // 50):
                spans = [s for n in range(batch * 50, batch * 50 + 50) for s in _attacker_trace(rng, n)]
                export(request_with(spans).SerializeToString(), timeout=60)
                sent += len(spans)
                if batch == 0:
                    settled(server)
                    with urllib.request.urlopen(metrics_url, timeout=10) as r:
                        early = len(_series(r.read().decode()))
            huge = _attacker_trace(rng, TRACES, huge=True)
            export(request_with(huge).SerializeToString(), timeout=60)
        s = settled(server)
        identity(s)
        assert total(s, "luckrate_spans_received_total") == sent + len(huge)
        assert total(s, "luckrate_runs_total") == TRACES + 1
        with urllib.request.urlopen(metrics_url, timeout=10) as r:
            late = len(_series(r.read().decode()))
    agents = _label_values(s, "agent")
    tools = _label_values(s, "tool") | _label_values(s, "privileged_tool") | _label_values(s, "source_tool")
    spec_tools = (
        set(load_specs(ROOT / "examples" / "spec.py")["*"].tools)
        if "*" in load_specs(ROOT / "examples" / "spec.py")
        else set(next(iter(load_specs(ROOT / "examples" / "spec.py").values())).tools)
    )
    assert len(agents) <= 21 and "other" in agents  # the first max_agents (20) names, then "other"
    assert tools <= spec_tools | {"other"}
    assert late == early, "series grew with attacker names"
    report("security.attacker_agent_names", TRACES * NAMES_PER_TRACE)
    report("security.attacker_tool_names", TRACES * NAMES_PER_TRACE)
    report("security.metric_series", late)
    # The verdict log echoes span data only in bounded form.
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == TRACES + 1
    longest = 0
    for line in lines:
        doc = json.loads(line)
        assert len(doc["violations"]) <= 100
        for value in _strings(doc):
            longest = max(longest, len(value))
    assert longest <= 513  # 512 characters and an ellipsis
    report("security.verdict_log_longest_value", longest)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# ---- specs: JSON never executes ---------------------------------------------------------------------


def test_json_specs_never_execute_anything(tmp_path):
    marker = tmp_path / "pwned"
    code = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    python_in_json = tmp_path / "spec.json"
    python_in_json.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\nSPEC = {{}}\n")
    strings_everywhere = tmp_path / "strings.json"
    strings_everywhere.write_text(
        json.dumps(
            {
                "SPEC": {
                    "tools": [code, "lookup_order"],
                    "required": [code],
                    "forbidden": [code],
                    "before": [[code, code]],
                    code: code,
                    "max_steps": code,
                }
            }
        )
    )
    deep = tmp_path / "deep.json"
    deep.write_text('{"SPEC": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for path in (python_in_json, strings_everywhere, deep):
        with pytest.raises(InvalidSpec):
            load_specs(path)
    # A valid JSON spec whose tool names are code loads as plain names.
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"SPEC": {"tools": [code, "lookup_order"], "required": ["lookup_order"]}}))
    assert code in next(iter(load_specs(plain).values())).tools
    # And through the service: a bad JSON spec stops it at start (exit 2), nothing runs.
    for path in (python_in_json, deep):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "luckrate.service",
                "--spec",
                str(path),
                "--grpc",
                "off",
                "--http",
                "off",
                "--prometheus",
                "off",
                "--viewer",
                "127.0.0.1:0",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        )
        assert done.returncode == 2, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
    assert not marker.exists()
