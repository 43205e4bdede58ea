"""TLS and mutual TLS on both receivers, with certificates made by the openssl CLI for this test."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import urllib.request

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from luckrate.core.spec import load_specs
from luckrate.service.app import build
from tests import external
from tests.builders import config
from tests.service.harness import PROTO, SPEC, record_runs, request_of, runs


@pytest.fixture(scope="module", autouse=True)
def needs_openssl() -> None:
    """The openssl CLI makes the certificates."""
    if shutil.which("openssl") is None:
        external.missing("the openssl CLI", "apt-get install -y openssl")


def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req",
        "-x509",
        *key,
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-subj",
        "/CN=luckrate-test-ca",
        "-days",
        "2",
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        _openssl("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            cwd=d,
        )
    return d


@pytest.fixture
def mtls_service(pki):
    svc = build(
        config(tls_cert=str(pki / "server.pem"), tls_key=str(pki / "server.key"), tls_client_ca=str(pki / "ca.pem")),
        load_specs(SPEC),
    )
    svc.start()
    yield svc
    assert svc.stop(10)


def _client_context(pki, with_cert: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    if with_cert:
        ctx.load_cert_chain(str(pki / "client.pem"), str(pki / "client.key"))
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
    ca = (pki / "ca.pem").read_bytes()
    good = grpc.ssl_channel_credentials(ca, (pki / "client.key").read_bytes(), (pki / "client.pem").read_bytes())
    with grpc.secure_channel(target, good) as channel:
        assert TraceServiceStub(channel).Export(request, timeout=10) == ExportTraceServiceResponse()
    with grpc.secure_channel(target, grpc.ssl_channel_credentials(ca)) as channel:
        with pytest.raises(grpc.RpcError) as e:
            TraceServiceStub(channel).Export(request, timeout=10)
        assert e.value.code() is grpc.StatusCode.UNAVAILABLE
