"""The run viewer and the HTML report in a real browser: the runs list, filters, a new run arriving without
a reload, a tainted run's provenance, a run not gradable, and planted payloads that stay inert."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from luckrate.core.spec_loader import load_specs
from luckrate.service.app import build
from tests.browser import payloads
from tests.builders import config
from tests.builders import CHAT_ONLY_CAPTURE
from tests.service.harness import SPEC, post, record_runs, request_of, runs, wait_until

KINDS = ["clean", "tainted", "forbidden", "clean", "unjudged"]


def expect(locator):
    from playwright.sync_api import expect

    return expect(locator)


def api(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=10) as r:
        return json.loads(r.read())


def send(svc, spans) -> None:
    body = request_of(spans).SerializeToString()
    port = next(r.port for r in svc.receivers if r.name == "http")
    assert post(f"http://127.0.0.1:{port}/v1/traces", body, "application/x-protobuf")[0] == 200


@pytest.fixture(scope="module")
def served():
    """luckrate serve in this process (one grader), fed the demo's runs, a payload run and a real capture
    with content off (not gradable)."""
    svc = build(config(trace_url="https://tempo.example/explore?trace={trace_id}&x=1"), load_specs(SPEC))
    svc.start()
    try:
        send(svc, record_runs(runs(KINDS)) + record_runs([payloads.run()]))
        port = next(r.port for r in svc.receivers if r.name == "http")
        assert (
            post(f"http://127.0.0.1:{port}/v1/traces", CHAT_ONLY_CAPTURE.read_bytes(), "application/x-protobuf")[0]
            == 200
        )
        base = f"http://127.0.0.1:{svc.viewer.port}"
        wait_until(lambda: api(base, "/api/runs")["last"] == len(KINDS) + 2, "every run in the viewer")
        yield svc, base
    finally:
        svc.stop(10)


def trace_of(base: str, **filters) -> str:
    query = "&".join(f"{k}={v}" for k, v in filters.items())
    return api(base, f"/api/runs?{query}")["runs"][0]["trace_id"]


def assert_inert(w, origin: str, shown=(payloads.SCRIPT, payloads.IMG, payloads.JS_URL, payloads.TEMPLATE)) -> None:
    """No payload ran: no flag set, no dialog, no request anywhere but the origin, no element it would add."""
    page = w.page
    assert page.evaluate("window.__pwned") is None
    assert w.dialogs == [] and w.errors == []
    assert [u for u in w.requests if not u.startswith(origin)] == []
    assert page.locator("img").count() == 0
    assert page.locator("textarea").count() == 0
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    assert not [h for h in hrefs if h.strip().lower().startswith("javascript")]
    sources = page.eval_on_selector_all("script", "els => els.map(e => e.getAttribute('src'))")
    assert all(s == "/static/viewer.js" for s in sources)  # only ours (none at all in the report)
    text = page.inner_text("body")
    for planted in shown:
        assert planted in text, planted  # shown as text, as written: not run, not evaluated
    assert "\u202e" not in text and "<U+202E>exe.txt<U+202C>" in text  # bidi controls shown, not obeyed


def test_the_runs_list_and_its_summary(served, watched):
    _, base = served
    page = watched.page
    page.goto(base + "/")
    assert page.locator("tbody#runs tr").count() == len(KINDS) + 2
    first = page.locator("tbody#runs tr").first.inner_text()
    assert "not gradable" in first  # the capture was sent last: newest first
    luck = page.locator("table.luck tbody").inner_text()
    assert re.search(r"support-agent\t\d+\.\d%", luck)
    assert "(none)\t—\t0\t0\t1\t1" in luck  # the capture's run names no agent: not gradable, no rate
    assert "taint" in page.locator("table.checks").inner_text()
    for row in page.locator("tbody#runs tr").all():  # every run links to the tracing backend
        tid = row.locator("a.trace").inner_text()
        assert row.locator("a.tracing").get_attribute("href") == f"https://tempo.example/explore?trace={tid}&x=1"


@pytest.mark.parametrize(
    "field, value, expected",
    [("path", "bad", {"bad"}), ("path", "not_gradable", {"not gradable"}), ("check", "forbidden", {"bad"})],
)
def test_filters(served, watched, field, value, expected):
    _, base = served
    page = watched.page
    page.goto(base + "/")
    page.select_option(f"select[name={field}]", value)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(f"{field}={value}"))
    cells = page.locator("tbody#runs tr td:nth-child(6)").all_inner_texts()
    assert cells and set(cells) == expected
    if field == "check":
        assert all(value in c for c in page.locator("tbody#runs tr td:nth-child(7)").all_inner_texts())


def test_trace_id_search(served, watched):
    _, base = served
    tid = trace_of(base, check="taint")
    page = watched.page
    page.goto(base + "/")
    page.fill("input[name=trace_id]", tid[:12])
    page.click("button[type=submit]")
    page.wait_for_url(re.compile("trace_id="))
    assert page.locator("tbody#runs tr a.trace").all_inner_texts() == [tid]


def test_a_new_run_appears_without_a_reload(served, watched):
    svc, base = served
    page = watched.page
    page.goto(base + "/")
    page.evaluate("window.__same_page = true")
    before = page.locator("tbody#runs tr").count()
    send(svc, record_runs(runs(["forbidden"], offset=500)))
    expect(page.locator("tbody#runs tr")).to_have_count(before + 1, timeout=30_000)
    assert page.evaluate("window.__same_page") is True  # the same document: no reload happened
    newest = page.locator("tbody#runs tr").first
    assert "forbidden" in newest.inner_text()
    tid = newest.locator("a.trace").inner_text()
    assert newest.locator("a.trace").get_attribute("href") == f"/runs/{tid}"
    assert newest.locator("a.tracing").get_attribute("href") == f"https://tempo.example/explore?trace={tid}&x=1"


def test_a_tainted_run_shows_where_the_value_came_from(served, watched):
    _, base = served
    tid = trace_of(base, check="taint")
    page = watched.page
    page.goto(f"{base}/runs/{tid}")
    step = page.locator("article.step.has-findings")
    assert "send_email" in step.inner_text() and "taint" in step.locator("ul.findings").inner_text()
    traced = step.locator(".traced-taint")
    assert traced.count() == 1
    text = traced.inner_text()
    assert "attacker@evil.example" in text and "tool:fetch_webpage" in text and "only in untrusted" in text
    link = page.locator("a.tracing")
    assert link.get_attribute("href") == f"https://tempo.example/explore?trace={tid}&x=1"
    assert page.locator("svg.bar").count() == 3  # one timeline bar per step: the run has a clock


def test_a_run_with_nothing_observable_says_not_gradable(served, watched):
    _, base = served
    tid = trace_of(base, path="not_gradable")
    page = watched.page
    page.goto(f"{base}/runs/{tid}")
    notice = page.locator("#not-gradable").inner_text()
    assert "nothing observable: no tool call and no content recorded" in notice
    assert "not in the Luck Rate" in notice
    assert page.locator("ul.findings").count() == 0


@pytest.mark.parametrize("where", ["list", "run"])
def test_planted_payloads_stay_inert(served, watched, where):
    _, base = served
    page = watched.page
    if where == "list":  # a run whose agent name is a payload arrives live: the page's script adds its row
        svc, _ = served
        page.goto(base + "/")
        before = page.locator("tbody#runs tr").count()
        agent = " ".join((payloads.TEMPLATE, payloads.BIDI, payloads.SCRIPT, payloads.IMG))  # under the 256 kept
        send(svc, record_runs([payloads.run(2, agent=agent)]))
        expect(page.locator("tbody#runs tr")).to_have_count(before + 1, timeout=30_000)
        assert payloads.SCRIPT in page.locator("tbody#runs tr").first.inner_text()
        page.reload()  # and the server-rendered list, with the same run in it, and in the filter's choices
        assert payloads.SCRIPT in page.locator("tbody#runs tr").first.inner_text()
        assert_inert(watched, base, shown=(payloads.TEMPLATE, payloads.SCRIPT, payloads.IMG))
        return
    tid = next(r["trace_id"] for r in api(base, "/api/runs")["runs"] if r["steps"] == 4)
    page.goto(f"{base}/runs/{tid}")
    for details in page.locator("details.long").all():  # expanded: the full values render too
        details.locator("summary").click()
    assert_inert(watched, base)


def test_the_html_report_opens_offline_with_payloads_inert(tmp_path, watched):
    from luckrate.adapters.trajectory import trajectory_to_dict
    from luckrate.cli import main
    from luckrate.adapters.otlp import OutputRule, records_from_request, trajectory_from_spans

    records, _ = records_from_request(request_of(record_runs([payloads.run(), *runs(["tainted"], offset=7)])))
    trajectories = []
    for tid in dict.fromkeys(r.trace_id for r in records):
        trajectories.append(trajectory_from_spans([r for r in records if r.trace_id == tid], OutputRule()))
    runs_file = tmp_path / "runs.jsonl"
    runs_file.write_text("\n".join(json.dumps(trajectory_to_dict(t)) for t in trajectories))
    report = tmp_path / "report.html"
    assert main(["grade", "--spec", str(SPEC), "--html", str(report), str(runs_file)]) == 1
    page = watched.page
    page.goto(report.as_uri())
    assert page.locator("section.run-page").count() == 2
    assert "Gate: FAILED" in page.inner_text("section.gate")
    assert page.locator("table.luck tbody tr").count() == 1
    assert page.locator(".traced-taint").count() >= 1
    page.click("tbody#runs tr:nth-child(2) a.trace")  # the list links to the run below, in the same file
    assert page.url.endswith("#run-1")
    assert_inert(watched, "file://")
    assert page.locator("script").count() == 0
    csp = page.locator("meta[http-equiv=Content-Security-Policy]").get_attribute("content")
    assert csp.startswith("default-src 'none'; style-src 'sha256-")
    # The stylesheet applied (its hash matched the CSP): the report is styled offline, not bare.
    assert page.eval_on_selector("body", "b => getComputedStyle(b).margin") == "0px"
