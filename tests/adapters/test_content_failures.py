"""A tool failure recorded only in the content: a result that is nothing but an error object.

A hand-written tool loop under a client instrumentation has no tool spans: the tool's failure is only in
the tool message it sends back, ``{"error": "PaymentGatewayError: ... (HTTP 503)"}``. Read as a success,
three failures in a row then an escalation read as ``repeat`` after success instead of a failing loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from luckrate.adapters.otlp import read_otlp
from luckrate.adapters.otlp.payloads import result_text
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.scenarios import FAILING_LOOP

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "tests" / "testdata" / "openai-v2" / "failing_loop.latest.openai-v2.otlp"
SPEC = spec_for(load_specs(ROOT / "examples" / "spec.py"), None)

RESULTS = [
    # result as recorded, reported failed
    ('{"error": "PaymentGatewayError: card declined (HTTP 503)"}', True),
    ('{"error": {"code": 503, "message": "gateway timeout"}}', True),
    ('{"errors": [{"message": "not found"}], "data": null}', True),
    ('{"Exception": "ValueError: bad id"}', True),
    ('{"content": [{"type": "text", "text": "unknown order"}], "isError": true}', True),  # MCP CallToolResult
    ('{"content": [{"type": "text", "text": "ORD-1 found"}], "isError": false}', False),
    ('{"order_id": "ORD-1", "error": "none"}', False),  # the tool's own data beside an error field
    ('{"error": null, "status": "delivered"}', False),
    ('{"error": ""}', False),
    ('{"error": false}', False),
    ("Error: order service unavailable", False),  # words are never read
    ('["error"]', False),
    ('{"status": "delivered"}', False),
]


@pytest.mark.parametrize("raw, failed", RESULTS, ids=[r for r, _ in RESULTS])
def test_a_result_that_is_only_an_error_object_reports_a_failure(raw, failed):
    text, reported = result_text(raw)
    assert text == raw
    assert reported is failed


def test_an_error_object_inside_a_tool_message_envelope():
    # OpenInference's ToolMessage serialization: the content is the error object, the status says nothing.
    raw = json.dumps({"type": "tool", "data": {"content": '{"error": "HTTP 503"}', "tool_call_id": "c1"}})
    assert result_text(raw) == ('{"error": "HTTP 503"}', True)


def _with_error_objects(capture: bytes) -> bytes:
    """The committed OpenAI tool-loop capture, its tool messages' ``Error: <message>`` words rewritten as
    the error object a loop that reports failures as JSON sends (the capture script's loop sends words;
    every other byte is as captured)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(capture)
    words = json.dumps("Error: order service unavailable")
    error = json.dumps(json.dumps({"error": "RuntimeError: order service unavailable"}))
    rewritten = 0
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                for attr in span.attributes:
                    if attr.key == "gen_ai.input.messages" and words in attr.value.string_value:
                        attr.value.string_value = attr.value.string_value.replace(words, error)
                        rewritten += 1
    assert rewritten == 4  # every model call after the first failure holds the history
    return request.SerializeToString()


def test_a_loop_whose_tool_messages_are_error_objects_is_a_failing_loop():
    (traj,) = read_otlp(_with_error_objects(CAPTURE.read_bytes()), CAPTURE.name)
    assert [s.tool for s in traj.steps] == [c.tool for c in FAILING_LOOP.calls]
    assert [s.failed for s in traj.steps] == [c.error is not None for c in FAILING_LOOP.calls]
    assert {(v.check, v.tool) for v in grade(traj, SPEC).violations} == FAILING_LOOP.expected


def test_the_same_loop_in_words_still_reads_as_repeats():
    # The control: the capture as committed says "Error: ..." in words, which are not read.
    (traj,) = read_otlp(CAPTURE.read_bytes(), CAPTURE.name)
    assert not any(s.failed for s in traj.steps)
    assert {(v.check, v.tool) for v in grade(traj, SPEC).violations} == {("repeat", "lookup_order")}
