"""`luckrate demo` emits GenAI-convention traces that the real adapter and grader judge as intended.

The spans go through the real OTel SDK (TracerProvider, in-memory exporter), the OTLP encoder of the
SDK's exporter package, luckrate's OTLP adapter and the grading core under examples/spec.py, so a
convention the adapter does not read, or a run that does not trip its check, fails here. The gRPC
delivery path is covered end to end (with the SDK's real OTLP/gRPC exporter) in test_e2e_prometheus.py.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from luckrate import demo
from luckrate.adapters.otlp import records_from_request
from luckrate.adapters.otlp.assemble import trajectory_from_spans
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs

SPECS = load_specs(Path(__file__).resolve().parents[2] / "examples" / "spec.py")

# kind -> (output_ok, expected (check, tool) violations under examples/spec.py)
EXPECTED = [
    ("clean", True, set()),
    ("unjudged", None, set()),
    ("user_supplied", True, set()),
    ("forbidden", True, {("forbidden", "delete_account")}),
    # The refund names an order nobody mentioned and nobody looked up: ungrounded, and not the same order
    # as the lookup before it (the argument-bound before).
    ("ungrounded", True, {("ungrounded", "issue_refund"), ("before", "issue_refund")}),
    ("tainted", True, {("taint", "send_email")}),
    ("failing", False, None),  # None: the failures must show, which checks fire on them is the spec's business
]


def _grade(run: demo.Run):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    demo.emit(provider.get_tracer("test"), run, start_ns=1_767_225_600_000_000_000)
    spans = exporter.get_finished_spans()
    records, rejected = records_from_request(encode_spans(spans))
    assert rejected == []
    traj = trajectory_from_spans(records)
    return spans, traj, grade(traj, spec_for(SPECS, traj.agent))


@pytest.mark.parametrize("kind, output_ok, violations", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_each_kind_grades_as_intended(kind: str, output_ok: bool | None, violations: set | None) -> None:
    run = demo.make_run(kind, 12, "support-agent")
    _, traj, g = _grade(run)
    assert traj.agent == "support-agent"
    assert [s.tool for s in traj.steps] == [c.tool for turn in run.turns for c in turn]
    assert g.output_ok is output_ok
    if violations is not None:
        assert {(v.check, v.tool) for v in g.violations} == violations
    else:
        assert [s.error for s in traj.steps][:2] == ["orders service unavailable (503)"] * 2


def test_taint_names_its_source() -> None:
    _, _, g = _grade(demo.make_run("tainted", 3, "billing-agent"))
    (taint,) = [v for v in g.violations if v.check == "taint"]
    assert taint.source == "fetch_webpage"


def test_spans_follow_genai_conventions() -> None:
    spans, _, _ = _grade(demo.make_run("failing", 5, "support-agent"))
    by_op = Counter(s.attributes["gen_ai.operation.name"] for s in spans)
    assert by_op == {"invoke_agent": 1, "chat": 4, "execute_tool": 3}
    root = next(s for s in spans if s.parent is None)
    assert root.attributes["gen_ai.agent.name"] == "support-agent" and root.attributes["luckrate.output_ok"] is False
    failed = [s for s in spans if s.status.status_code.name == "ERROR"]
    assert [s.attributes["gen_ai.tool.name"] for s in failed] == ["lookup_order", "lookup_order"]
    assert all("gen_ai.tool.call.result" not in s.attributes for s in failed)
    assert all(s.start_time < s.end_time for s in spans)


def test_the_mix_covers_every_kind_and_both_agents() -> None:
    runs = [demo.nth_run(i) for i in range(2 * len(demo.CYCLE))]
    assert {r.kind for r in runs} == {e[0] for e in EXPECTED}
    assert {(r.agent, r.kind) for r in runs} == {(a, k) for a in demo.AGENTS for k in demo.CYCLE}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--endpoint", "localhost"], "--endpoint: 'localhost' is not HOST:PORT"),
        (
            ["--endpoint", "localhost:4317", "--rate", "0"],
            "--rate: must be a positive number of runs per second, got 0.0",
        ),
        (["--endpoint", "localhost:4317", "--duration", "-1"], "--duration and --runs must not be negative"),
    ],
)
def test_bad_arguments_are_named(argv: list[str], message: str, capsys) -> None:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    assert demo.run(parser.parse_args(argv)) == 2
    assert capsys.readouterr().err.strip() == f"luckrate demo: {message}"


def test_endpoint_defaults_to_where_serve_listens() -> None:
    # The README said the demo defaults to 127.0.0.1:4317, but --endpoint was required.
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    assert parser.parse_args([]).endpoint == "127.0.0.1:4317"


def test_without_the_otlp_extra_the_error_names_it() -> None:
    # Stand-in for an install without the extra: the exporter module is blocked from importing (None in
    # sys.modules), as this test environment has the package installed.
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['opentelemetry.exporter.otlp.proto.grpc.trace_exporter'] = None; "
        "from luckrate.cli import main; sys.exit(main(['demo', '--runs', '1']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (
        "luckrate demo: needs opentelemetry-exporter-otlp-proto-grpc, in luckrate's otlp extra: "
        "pip install 'luckrate[otlp]' (from a checkout: pip install -e '.[otlp]')\n"
    )
