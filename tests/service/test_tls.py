"""TLS and mutual TLS on both receivers, with the certificates tests/conftest.py makes (``pki``)."""

from __future__ import annotations

import ssl
import urllib.request

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from luckrate.core.spec_loader import load_specs
from luckrate.service.app import build
from tests.builders import config
from tests.service.harness import PROTO, SPEC, record_runs, request_of, runs


@pytest.fixture
def mtls_service(pki):
    svc = build(
        config(tls_cert=str(pki["server"][0]), tls_key=str(pki["server"][1]), tls_client_ca=str(pki["ca"])),
        load_specs(SPEC),
    )
    svc.start()
    yield svc
    assert svc.stop(10)


def _client_context(pki, with_cert: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki["ca"]))
    if with_cert:
        ctx.load_cert_chain(*map(str, pki["client"]))
    return ctx


def test_http_mutual_tls(pki, mtls_service):
    body = request_of(record_runs(runs(["clean"]))).SerializeToString()
    url = f"https://127.0.0.1:{mtls_service.receivers[1].port}/v1/traces"
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": PROTO})
    with urllib.request.urlopen(req, timeout=10, context=_client_context(pki, True)) as r:
        assert r.status == 200
    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
        urllib.request.urlopen(req, timeout=10, context=_client_context(pki, False))


def test_grpc_mutual_tls(pki, mtls_service):
    request = request_of(record_runs(runs(["clean"])))
    target = f"127.0.0.1:{mtls_service.receivers[0].port}"
    ca = pki["ca"].read_bytes()
    cert, key = pki["client"]
    good = grpc.ssl_channel_credentials(ca, key.read_bytes(), cert.read_bytes())
    with grpc.secure_channel(target, good) as channel:
        assert TraceServiceStub(channel).Export(request, timeout=10) == ExportTraceServiceResponse()
    with grpc.secure_channel(target, grpc.ssl_channel_credentials(ca)) as channel:
        with pytest.raises(grpc.RpcError) as e:
            TraceServiceStub(channel).Export(request, timeout=10)
        assert e.value.code() is grpc.StatusCode.UNAVAILABLE
