"""curl, the client people reach for first: chunked bodies (protobuf, JSON, gzip) and Expect: 100-continue,
graded as the core grades them; and Expect over the size limit answered 413 before the body is sent."""

from __future__ import annotations

import gzip
import shutil
import subprocess

import pytest

from tests import external
from tests.builders import otlp_json
from tests.interop.harness import assert_graded_right, runs_for
from tests.service.harness import Server, record_runs, request_of, total

LIMIT = 1024 * 1024
CASES = [
    # (case, content type, gzip, extra curl headers)
    ("chunked protobuf", "application/x-protobuf", False, ["Transfer-Encoding: chunked"]),
    ("chunked json", "application/json", False, ["Transfer-Encoding: chunked"]),
    ("chunked gzip protobuf", "application/x-protobuf", True, ["Transfer-Encoding: chunked"]),
    ("expect 100-continue", "application/x-protobuf", False, ["Expect: 100-continue"]),
    (
        "chunked with expect 100-continue",
        "application/json",
        True,
        ["Transfer-Encoding: chunked", "Expect: 100-continue"],
    ),
]


@pytest.fixture(scope="module", autouse=True)
def needs_curl() -> None:
    if shutil.which("curl") is None:
        external.missing("curl", "apt-get install -y curl")


@pytest.fixture(scope="module")
def server():
    with Server("--root-grace", "1", "--max-request-bytes", str(LIMIT)) as s:
        yield s


def curl(url: str, body_file, headers: list[str]) -> tuple[int, str]:
    """POST the file with curl; (status, curl's verbose trace)."""
    cmd = ["curl", "-sS", "-v", "-o", "/dev/null", "-w", "%{http_code}", "--data-binary", f"@{body_file}", url]
    for h in headers:
        cmd += ["-H", h]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stdout), done.stderr


@pytest.mark.parametrize("case, ctype, gz, headers", CASES, ids=[c[0] for c in CASES])
def test_curl_is_graded_right(server, tmp_path, case, ctype, gz, headers):
    agent = "curl-" + case.replace(" ", "-")
    runs = runs_for(agent)
    request = request_of(record_runs(runs))
    body = request.SerializeToString() if ctype.endswith("protobuf") else otlp_json(request)
    body_file = tmp_path / "body"
    body_file.write_bytes(gzip.compress(body) if gz else body)
    extra = [f"Content-Type: {ctype}", *headers] + (["Content-Encoding: gzip"] if gz else [])
    status, trace = curl(server.http + "/v1/traces", body_file, extra)
    assert status == 200, trace
    if "Transfer-Encoding: chunked" in headers:
        assert "> Transfer-Encoding: chunked" in trace and "> Content-Length" not in trace
    if "Expect: 100-continue" in headers:
        assert "< HTTP/1.1 100 Continue" in trace
    assert_graded_right(server, agent, runs)


def test_curl_expect_over_the_limit_gets_413_without_sending_the_body(tmp_path):
    body_file = tmp_path / "big"
    body_file.write_bytes(b"\x00" * (LIMIT + 1))
    with Server("--max-request-bytes", str(LIMIT)) as server:  # its own: the graded tests expect no refusal
        status, trace = curl(
            server.http + "/v1/traces", body_file, ["Content-Type: application/x-protobuf", "Expect: 100-continue"]
        )
        assert status == 413
        assert "100 Continue" not in trace
        assert total(server.scrape(), "luckrate_requests_refused_total", transport="http", reason="too_large") == 1
