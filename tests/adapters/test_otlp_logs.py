"""Log records joined to their traces (adapters/otlp/logs.py), on captures of the contrib OpenAI
instrumentation (tests/testdata/openai-v2) in every content mode it has."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from luckrate.adapters import InvalidInput
from luckrate.adapters.otlp import records_from_request
from luckrate.adapters.otlp.conventions import input_messages, output_messages
from luckrate.adapters.otlp.logs import events_from_request, joined
from luckrate.adapters.otlp.readers import read_otlp_files
from luckrate.adapters.otlp.requests import logs_request_from_json, logs_request_from_protobuf
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.builders import otlp_json
from tests.scenarios import BY_NAME

DATA = Path(__file__).resolve().parents[1] / "testdata" / "openai-v2"
SPEC = Path(__file__).resolve().parents[2] / "examples" / "spec.py"
NAMES = ("clean", "forbidden", "injected", "user_supplied")
LOGGED = ("legacy", "legacy.nocontent", "latest.event_only", "latest.span_and_event")
"""Modes whose messages travel in log records."""
MODES = (*LOGGED, "latest.span_only", "latest.nocontent")


def capture(name: str, mode: str) -> tuple[bytes, bytes]:
    stem = f"{name}.{mode}.openai-v2"
    return (DATA / f"{stem}.traces.otlp").read_bytes(), (DATA / f"{stem}.logs.otlp").read_bytes()


def spans_and_logs(name: str, mode: str):
    traces, logs = capture(name, mode)
    spans, rejected = records_from_request(ExportTraceServiceRequest.FromString(traces))
    assert not rejected
    events, rejected = events_from_request(logs_request_from_protobuf(logs))
    assert not rejected
    return spans, events


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", LOGGED)
def test_every_record_joins_the_model_span_that_produced_it(name, mode):
    spans, events = spans_and_logs(name, mode)
    assert events and all(e.span_id for e in events)
    model_spans = {s.span_id for s in spans if s.name.startswith("chat ")}
    assert {e.span_id for e in events} == model_spans
    out = joined(spans, events)
    for span in out:
        mine = tuple(e.event for e in events if e.span_id == span.span_id)
        assert span.events == mine  # the capture's spans carry no events of their own


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", LOGGED)
def test_a_joined_record_equals_the_same_event_on_a_span(name, mode):
    """The same AnyValues sent as a span event (the body's kvlist fields as its attributes) compact to the
    very SpanEvent the log record becomes."""
    _, logs = capture(name, mode)
    request = logs_request_from_protobuf(logs)
    events, _ = events_from_request(request)
    records = [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    for record, log in zip(records, events):
        span = Span(trace_id=record.trace_id, span_id=record.span_id, name="chat")
        ev = span.events.add(
            name=record.event_name, time_unix_nano=record.time_unix_nano or record.observed_time_unix_nano
        )
        ev.attributes.extend(record.attributes)
        if record.body.HasField("kvlist_value"):
            ev.attributes.extend(record.body.kvlist_value.values)
        req = ExportTraceServiceRequest()
        req.resource_spans.add().scope_spans.add().spans.append(span)
        (on_span,), _ = records_from_request(req)
        assert on_span.events == (log.event,)


@pytest.mark.parametrize("name", NAMES)
def test_messages_in_log_records_read_as_the_same_messages_in_span_attributes(name):
    """EVENT_ONLY puts in records exactly what SPAN_ONLY puts on the spans: each model call's input and
    output messages read the same (ids are the scripted model's, so both runs agree)."""
    on_spans, _ = spans_and_logs(name, "latest.span_only")
    spans, events = spans_and_logs(name, "latest.event_only")
    from_logs = joined(spans, events)

    def read(records):
        models = sorted((s for s in records if s.name.startswith("chat ")), key=lambda s: s.start_ns)
        return [(input_messages(s), output_messages(s)) for s in models]

    assert read(from_logs) == read(on_spans)
    assert all(i and o for i, o in read(from_logs))


def expected_violations(name: str, mode: str) -> frozenset:
    expected = BY_NAME[name].expected
    if mode.endswith("nocontent"):  # no arguments or results: nothing to trace provenance through
        expected = frozenset(v for v in expected if v[0] != "taint")
    return expected


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", MODES[:-1])
def test_captures_graded_from_files_with_their_logs(name, mode):
    traces, logs = capture(name, mode)
    (run,) = read_otlp_files([(traces, "traces")], [(logs, "logs")])
    assert [s.tool for s in run.steps] == [c.tool for c in BY_NAME[name].calls]
    assert run.content == (not mode.endswith("nocontent"))
    g = grade(run, spec_for(load_specs(SPEC), run.agent))
    assert {(v.check, v.tool) for v in g.violations} == expected_violations(name, mode)


@pytest.mark.parametrize("name", NAMES)
def test_with_content_off_in_the_latest_conventions_nothing_names_a_tool(name):
    """NO_CONTENT: the instrumentation records no message, on spans or in records: no step can be read."""
    traces, logs = capture(name, "latest.nocontent")
    assert not events_from_request(logs_request_from_protobuf(logs))[0]
    (run,) = read_otlp_files([(traces, "traces")], [(logs, "logs")])
    assert run.steps == ()


@pytest.mark.parametrize("name", NAMES)
def test_legacy_spans_alone_hold_no_tool_sequence(name):
    """What the records add: the legacy spans carry no messages, so without the logs file there are no steps."""
    traces, _ = capture(name, "legacy")
    (run,) = read_otlp_files([(traces, "traces")])
    assert run.steps == ()


def test_a_logs_file_among_the_files_is_told_apart_by_content():
    traces, logs = capture("forbidden", "legacy")
    (by_content,) = read_otlp_files([(logs, "logs"), (traces, "traces")])
    (by_flag,) = read_otlp_files([(traces, "traces")], [(logs, "logs")])
    assert by_content == by_flag and by_content.steps


def test_otlp_json_logs_decode_to_the_same_events_as_protobuf():
    _, logs = capture("injected", "latest.event_only")
    request = logs_request_from_protobuf(logs)
    assert events_from_request(logs_request_from_json(otlp_json(request))) == events_from_request(request)


def _record(**fields) -> LogRecord:
    return LogRecord(**fields)


TRACE, SPAN = bytes(range(1, 17)), bytes(range(1, 9))
REJECTED = [
    ("no event name", _record(trace_id=TRACE, body=AnyValue(string_value="hello")), "not_read"),
    ("an application's event", _record(trace_id=TRACE, event_name="app.started"), "not_read"),
    ("no trace id", _record(event_name="gen_ai.choice"), "no_trace_id"),
    ("all-zero trace id", _record(trace_id=bytes(16), event_name="gen_ai.choice"), "no_trace_id"),
    ("short trace id", _record(trace_id=b"\x01" * 8, event_name="gen_ai.choice"), "no_trace_id"),
]


@pytest.mark.parametrize("what, record, reason", REJECTED, ids=[r[0] for r in REJECTED])
def test_records_not_kept_are_counted_by_reason(what, record, reason):
    req = ExportLogsServiceRequest()
    usable = _record(trace_id=TRACE, event_name="gen_ai.choice")
    req.resource_logs.add().scope_logs.add().log_records.extend([record, usable])
    events, rejected = events_from_request(req)
    assert [(r.reason, r.count) for r in rejected] == [(reason, 1)]
    assert len(events) == 1


def test_the_event_name_attribute_names_an_event_of_older_sdks_and_a_string_body_is_its_content():
    record = _record(
        trace_id=TRACE,
        span_id=SPAN,
        time_unix_nano=5,
        attributes=[KeyValue(key="event.name", value=AnyValue(string_value="gen_ai.user.message"))],
        body=AnyValue(string_value='{"content": "hi"}'),
    )
    req = ExportLogsServiceRequest()
    req.resource_logs.add().scope_logs.add().log_records.append(record)
    (event,), _ = events_from_request(req)
    assert (event.event.name, event.event.time_ns, event.event.attributes) == (
        "gen_ai.user.message",
        5,
        (("gen_ai.event.content", '{"content": "hi"}'),),
    )


def test_a_record_naming_no_span_of_its_trace_goes_to_the_innermost_span_open_at_its_time():
    spans, events = spans_and_logs("forbidden", "legacy")
    model = sorted((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_ns)[1]
    unnamed = [
        type(e)(e.trace_id, b"", type(e.event)(e.event.name, (model.start_ns + model.end_ns) // 2, e.event.attributes))
        for e in events[:1]
    ]
    out = {s.span_id: s for s in joined(spans, unnamed)}
    assert out[model.span_id].events == (unnamed[0].event,)
    root = next(s for s in spans if not s.parent_id)
    late = [type(e)(e.trace_id, b"", type(e.event)(e.event.name, 0, e.event.attributes)) for e in events[:1]]
    assert {s.span_id: s for s in joined(spans, late)}[root.span_id].events == (late[0].event,)


LOG_FILE_ERRORS = [
    ("records of a trace no trace file holds", "other", "1 log record(s) of 1 trace(s) no trace file holds"),
    (
        "a GenAI record without a trace id",
        "no_trace",
        "logs: log records that cannot be joined to a trace: 1 no_trace_id",
    ),
]


@pytest.mark.parametrize("what, case, message", LOG_FILE_ERRORS, ids=[e[0] for e in LOG_FILE_ERRORS])
def test_log_records_a_file_cannot_join_are_bad_input(what, case, message):
    traces, _ = capture("clean", "legacy")
    req = ExportLogsServiceRequest()
    record = _record(event_name="gen_ai.choice", trace_id=TRACE if case == "other" else b"")
    req.resource_logs.add().scope_logs.add().log_records.append(record)
    with pytest.raises(InvalidInput) as e:
        read_otlp_files([(traces, "traces")], [(req.SerializeToString(), "logs")])
    assert str(e.value).startswith(message)


def test_only_a_logs_file_is_bad_input():
    _, logs = capture("clean", "legacy")
    with pytest.raises(InvalidInput, match="only log records: give the trace files they belong to"):
        read_otlp_files([(logs, "logs")])


# Traceloop's Anthropic instrumentation: records name the application span around the model call.
ANTHROPIC = Path(__file__).resolve().parents[1] / "testdata" / "anthropic"
ALL_NAMES = NAMES + ("confirmed", "unconfirmed", "other_order")


def anthropic(name: str, mode: str):
    from tests.scenarios import POLICY_SCENARIOS

    stem = ANTHROPIC / f"{name}.{mode}.anthropic"
    scenario = {**BY_NAME, **{s.name: s for s in POLICY_SCENARIOS}}[name]
    return (Path(f"{stem}.traces.otlp").read_bytes(), Path(f"{stem}.logs.otlp").read_bytes()), scenario


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("mode", ["events", "events.nocontent"])
def test_records_naming_the_application_span_join_the_model_span_open_inside_it(name, mode):
    (traces, logs), _ = anthropic(name, mode)
    spans, _ = records_from_request(ExportTraceServiceRequest.FromString(traces))
    events, rejected = events_from_request(logs_request_from_protobuf(logs))
    root = next(s for s in spans if not s.parent_id)
    assert not rejected and {e.span_id for e in events} == {root.span_id}
    out = joined(spans, events)
    assert next(s for s in out if s.span_id == root.span_id).events == ()
    for model in (s for s in out if s.name == "anthropic.chat"):
        assert [e.name for e in model.events].count("gen_ai.choice") >= 1
        assert all(model.start_ns <= e.time_ns <= model.end_ns for e in model.events)
    assert sum(len(s.events) for s in out) == len(events)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("mode", ["events", "events.nocontent", "attributes"])
def test_the_tool_sequence_is_read_from_traceloop_records(name, mode):
    (traces, logs), scenario = anthropic(name, mode)
    (run,) = read_otlp_files([(traces, "traces")], [(logs, "logs")])
    assert [s.tool for s in run.steps] == [c.tool for c in scenario.calls]


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("mode", ["attributes", "events"])
def test_traceloop_anthropic_captures_graded_with_their_logs(name, mode):
    # In the events mode the message records carry Anthropic content blocks (tool_use in the assistant's,
    # tool_result in the user's): read as calls and results, or results, and so taint, went missing.
    (traces, logs), scenario = anthropic(name, mode)
    (run,) = read_otlp_files([(traces, "traces")], [(logs, "logs")])
    g = grade(run, spec_for(load_specs(SPEC), run.agent))
    assert {(v.check, v.tool) for v in g.violations} == scenario.expected


@pytest.mark.parametrize("label, expected", [("pass", True), ("fail", False)])
def test_an_evaluation_result_sent_as_a_log_record_decides_the_output(label, expected):
    """GenAI evaluation results are events, which evaluators emit as log records: one tied to the run's
    root decides output_ok as the same event on the span does."""
    traces, logs = capture("clean", "legacy")
    req = ExportTraceServiceRequest.FromString(traces)
    root = next(s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans if not s.parent_span_id)
    del root.attributes[:]  # no luckrate.output_ok: the evaluation decides
    logs_req = logs_request_from_protobuf(logs)
    logs_req.resource_logs.add().scope_logs.add().log_records.append(
        _record(
            trace_id=root.trace_id,
            span_id=root.span_id,
            event_name="gen_ai.evaluation.result",
            time_unix_nano=root.end_time_unix_nano,
            attributes=[
                KeyValue(key="gen_ai.evaluation.name", value=AnyValue(string_value="answer-check")),
                KeyValue(key="gen_ai.evaluation.score.label", value=AnyValue(string_value=label)),
            ],
        )
    )
    (run,) = read_otlp_files([(req.SerializeToString(), "traces")], [(logs_req.SerializeToString(), "logs")])
    assert run.output_ok is expected
    (without,) = read_otlp_files([(req.SerializeToString(), "traces")], [(logs, "logs")])
    assert without.output_ok is None
