"""The run viewer's HTTP server: lifecycle, answers and their headers, the bearer token, and runs reaching
it from the grader in one process and from grading processes (``--workers 2``)."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest

from luckrate.core.grade import grade
from luckrate.core.spec_loader import load_specs
from luckrate.service.config import Endpoint, InvalidConfig, ServiceConfig, finalize
from luckrate.service.export.run_ring import RunRing
from luckrate.service.export.viewer import Viewer, ViewerServer
from luckrate.view.render import CSP
from tests.core.helpers import run, step
from tests.service.harness import SPEC, Server, post, record_runs, request_of, runs, wait_until

SPECS = load_specs(SPEC)
LOOP = Endpoint("127.0.0.1", 0)


def get(url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture
def served():
    ring = RunRing(10)
    for i, tool in enumerate(["lookup_order", "delete_account"]):
        traj = run(step(tool, {"order_id": "A"}), id=f"{i + 1:032x}", input="A")
        ring.add(grade(traj, SPECS["*"]), traj, SPECS["*"], (traj.id,))
    server = ViewerServer(LOOP, Viewer(ring, trace_url="https://tempo.example/trace/{trace_id}"))
    server.start()
    yield f"http://127.0.0.1:{server.port}", ring
    server.shutdown()


def test_lifecycle_shutdown_without_start():
    ViewerServer(LOOP, Viewer(RunRing(1))).shutdown()


@pytest.mark.parametrize(
    "path, status, kind",
    [
        ("/", 200, "text/html; charset=utf-8"),
        ("/api/runs", 200, "application/json"),
        ("/api/summary", 200, "application/json"),
        (f"/api/runs/{1:032x}", 200, "application/json"),
        (f"/runs/{1:032x}", 200, "text/html; charset=utf-8"),
        (f"/api/runs/{9:032x}", 404, "application/json"),
        (f"/runs/{9:032x}", 404, "text/html; charset=utf-8"),
        ("/runs/<script>", 404, "text/plain"),
        ("/static/viewer.js", 200, "text/javascript; charset=utf-8"),
        ("/static/../app.py", 404, "text/plain"),
    ],
)
def test_every_answer_carries_the_csp(served, path, status, kind):
    url, _ = served
    code, headers, _ = get(url + path)
    assert (code, headers["Content-Type"]) == (status, kind)
    assert headers["Content-Security-Policy"] == CSP
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_api_filters_and_after(served):
    url, _ = served
    everything = json.loads(get(url + "/api/runs")[2])
    assert [r["trace_id"] for r in everything["runs"]] == [f"{2:032x}", f"{1:032x}"]
    assert (everything["last"], everything["held"], everything["capacity"], everything["evicted"]) == (2, 2, 10, 0)
    bad = json.loads(get(url + "/api/runs?path=bad&check=forbidden")[2])["runs"]
    assert [r["trace_id"] for r in bad] == [f"{2:032x}"]
    assert json.loads(get(url + "/api/runs?after=2")[2])["runs"] == []
    assert [r["seq"] for r in json.loads(get(url + "/api/runs?limit=1")[2])["runs"]] == [2]
    assert len(json.loads(get(url + "/api/runs?limit=99999999999")[2])["runs"]) == 2  # capped, not refused
    assert [r["seq"] for r in json.loads(get(url + "/api/runs?trace_id=01")[2])["runs"]] == [1]
    one = json.loads(get(url + f"/api/runs/{2:032x}")[2])
    assert one["trace_urls"] == [f"https://tempo.example/trace/{2:032x}"]
    assert [f["check"] for f in one["steps"][0]["findings"]] == ["forbidden"]


def test_a_token_is_asked_for_and_checked():
    server = ViewerServer(LOOP, Viewer(RunRing(1)), token="s3cret")
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/api/runs"
        code, headers, _ = get(url)
        assert (code, headers["WWW-Authenticate"]) == (401, 'Basic realm="luckrate"')
        assert get(url, {"Authorization": "Bearer nope"})[0] == 401
        assert get(url, {"Authorization": "Bearer s3cret"})[0] == 200
        basic = base64.b64encode(b"anyone:s3cret").decode()
        assert get(url, {"Authorization": f"Basic {basic}"})[0] == 200
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    "over, key, says",
    [
        ({"viewer": Endpoint("0.0.0.0", 9465)}, "viewer", "is not loopback"),
        ({"trace_url": "https://tempo.example/trace/"}, "trace_url", "{trace_id}"),
        ({"public_url": "luckrate.example"}, "public_url", "http(s) URL"),
        ({"public_url": "https://luckrate.example/", "viewer": None}, "public_url", "the viewer is off"),
    ],
)
def test_bad_viewer_config_is_refused_naming_the_key(over, key, says):
    with pytest.raises(InvalidConfig) as e:
        finalize(ServiceConfig(spec=str(SPEC), **over), "t", env={})
    assert [k for k, _ in e.value.problems] == [key] and says in e.value.problems[0][1]


def test_off_loopback_with_a_token_is_accepted():
    cfg = finalize(
        ServiceConfig(spec=str(SPEC), viewer=Endpoint("0.0.0.0", 9465)), "t", env={"LUCKRATE_BEARER_TOKEN": "t"}
    )
    assert cfg.bearer_token == "t"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_runs_reach_the_viewer_from_every_grading_process(workers):
    kinds = ["clean", "tainted", "forbidden", "tainted", "tainted", "unjudged"]  # a tainted one among any 5
    with Server("--workers", workers, "--root-grace", "0.05", "--viewer-runs", "5") as server:
        body = request_of(record_runs(runs(kinds))).SerializeToString()
        assert post(server.http + "/v1/traces", body, "application/x-protobuf")[0] == 200
        viewer = f"http://127.0.0.1:{server.ports['viewer']}"

        def held():
            answer = json.loads(get(viewer + "/api/runs")[2])
            return answer if answer["last"] == len(kinds) else None

        answer = wait_until(held, "every run in the viewer")
        assert (answer["held"], answer["evicted"]) == (5, 1)
        tainted = json.loads(get(viewer + "/api/runs?check=taint")[2])["runs"]
        assert tainted and all(r["path"] == "bad" for r in tainted)
        page = json.loads(get(viewer + f"/api/runs/{tainted[0]['trace_id']}")[2])
        assert any(e["taint"] for s in page["steps"] for e in s["provenance"])
        scrape = server.wait_metric("luckrate_viewer_runs_evicted_total", 1)
        assert scrape
        assert server.terminate() == 0


def test_tls_and_token_together(pki):
    """Off loopback the viewer takes the receivers' TLS (app.build hands it over); served here on loopback."""
    import ssl

    from luckrate.service.security import http_context

    cert, key = pki["server"]
    tls = http_context(ServiceConfig(tls_cert=str(cert), tls_key=str(key)))
    server = ViewerServer(LOOP, Viewer(RunRing(1)), tls=tls, token="s3cret")
    server.start()
    try:
        assert server.url.startswith("https://")
        client = ssl.create_default_context(cafile=str(pki["ca"]))
        request = urllib.request.Request(
            f"https://127.0.0.1:{server.port}/api/runs", headers={"Authorization": "Bearer s3cret"}
        )
        with urllib.request.urlopen(request, context=client, timeout=10) as r:
            assert r.status == 200 and json.loads(r.read())["runs"] == []
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP to a TLS port: no page
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/api/runs", timeout=10)
    finally:
        server.shutdown()


def test_content_off_reaches_no_page():
    secret = "ORD-42"  # the demo's tainted run number 42 carries this order id in arguments and results
    with Server("--workers", "2", "--root-grace", "0.05", "--viewer-content", "off") as server:
        body = request_of(record_runs(runs(["tainted"], offset=42))).SerializeToString()
        assert post(server.http + "/v1/traces", body, "application/x-protobuf")[0] == 200
        viewer = f"http://127.0.0.1:{server.ports['viewer']}"
        wait_until(lambda: json.loads(get(viewer + "/api/runs")[2])["last"] == 1, "the run in the viewer")
        tid = json.loads(get(viewer + "/api/runs")[2])["runs"][0]["trace_id"]
        answer, page = get(viewer + f"/api/runs/{tid}")[2], get(viewer + f"/runs/{tid}")[2]
        listing = get(viewer + "/")[2]
        for text in (answer, page, listing):
            assert secret.encode() not in text and b"attacker@evil.example" not in text
        run = json.loads(answer)
        assert [f["check"] for f in run["violations"]] == ["taint"]  # still graded on the content, then hidden
        assert run["content"] is False and all(not s["args"] and s["result"] is None for s in run["steps"])
        assert server.terminate() == 0
