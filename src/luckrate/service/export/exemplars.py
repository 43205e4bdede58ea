"""Exemplars: which graded trace a counter's latest increment came from.

The OTel SDK's exemplar machinery fits most of the way: the worker records the run, violation and taint
counters with a ``Context`` holding the graded trace's root span (``trace_context``); the SDK's
``TraceBasedExemplarFilter`` admits exactly those measurements (nothing else the service records has a
span in its context), and the exemplars arrive on the data points the readers collect.

Its default reservoir does not fit: ``SimpleFixedSizeExemplarReservoir(size=1)`` keeps a *random*
measurement of those since the last collection and forgets it at every collection, so a scrape between two
increments would show none and a burst would show any of them. ``LatestExemplar`` keeps the latest
sampled measurement of its series and reports it at every collection (cumulative, like the counter), which
is what "the trace behind the latest increment" means and what Prometheus stores once (it skips an
exemplar identical to the last one of the series).
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import Exemplar, ExemplarReservoir
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.util.types import Attributes

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def trace_context(trace_id: bytes, span_id: bytes) -> Context:
    """A context whose current span is the given (remote, sampled) span: it was exported to us, so sampled."""
    ctx = SpanContext(
        int.from_bytes(trace_id, "big"), int.from_bytes(span_id, "big"), is_remote=True, trace_flags=_SAMPLED
    )
    return trace.set_span_in_context(NonRecordingSpan(ctx))


class LatestExemplar(ExemplarReservoir):
    """One exemplar per series: the latest measurement offered with a valid span, kept across collections."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        self._latest: Exemplar | None = None

    def offer(self, value: float, time_unix_nano: int, attributes: Attributes, context: Context) -> None:
        span = trace.get_current_span(context).get_span_context()
        if span.is_valid:
            # One assignment: atomic under the GIL, so no lock between offer and collect.
            self._latest = Exemplar(None, value, time_unix_nano, span.span_id, span.trace_id)

    def collect(self, point_attributes: Attributes) -> list[Exemplar]:
        latest = self._latest
        return [latest] if latest is not None else []


def latest_reservoir_factory(aggregation_type: type) -> type[LatestExemplar]:
    """For ``View(exemplar_reservoir_factory=...)``: the same reservoir whatever the aggregation."""
    return LatestExemplar
