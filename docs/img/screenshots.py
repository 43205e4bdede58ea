"""Make the run viewer's screenshots in docs/img: ``.venv/bin/python docs/img/screenshots.py``.

Starts ``luckrate serve`` in this process on free loopback ports, sends it the demo agent's runs over
OTLP/gRPC, and photographs the runs list and a tainted run with Debian's chromium (Playwright with the
system executable). Needs ``pip install -e '.[test]'`` and ``apt-get install -y chromium``.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from playwright.sync_api import sync_playwright

from luckrate import demo
from luckrate.core.spec_loader import load_specs
from luckrate.service.app import build
from luckrate.service.config import Endpoint, ServiceConfig

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
KINDS = ["clean", "tainted", "forbidden", "clean", "ungrounded", "unjudged", "clean", "user_supplied", "failing"]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def api(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=10) as r:
        return json.loads(r.read())


def main() -> int:
    loop = Endpoint("127.0.0.1", 0)
    cfg = replace(
        ServiceConfig(spec=str(ROOT / "examples" / "spec.py")),
        grpc=loop,
        http=None,
        prometheus=None,
        viewer=loop,
        workers=1,
        root_grace=0.05,
        trace_url="https://grafana.example/explore?trace={trace_id}",
    )
    svc = build(cfg, load_specs(cfg.spec))
    svc.start()
    try:
        provider = TracerProvider()
        port = svc.receivers[0].port
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)))
        tracer = provider.get_tracer("luckrate.screenshots")
        for i, kind in enumerate(KINDS):
            demo.emit(tracer, demo.make_run(kind, 100 + i, "support-agent"))
        provider.shutdown()
        base = f"http://127.0.0.1:{svc.viewer.port}"
        deadline = time.monotonic() + 30
        while api(base, "/api/runs")["last"] < len(KINDS):
            if time.monotonic() > deadline:
                raise SystemExit("the runs did not reach the viewer within 30 s")
            time.sleep(0.1)
        tainted = api(base, "/api/runs?check=taint")["runs"][0]["trace_id"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            page.goto(base + "/")
            page.screenshot(path=str(OUT / "viewer-runs.png"), full_page=True)
            page.goto(f"{base}/runs/{tainted}")
            page.locator("article.step.has-findings").scroll_into_view_if_needed()
            page.screenshot(path=str(OUT / "viewer-run.png"), full_page=True)
            browser.close()
    finally:
        svc.stop(10)
    print(f"wrote {OUT / 'viewer-runs.png'} and {OUT / 'viewer-run.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
