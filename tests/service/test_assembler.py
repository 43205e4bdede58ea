"""Trace assembly on a fake clock: completion reasons, duplicates, late spans, ordering, budget release."""

from __future__ import annotations

import functools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from luckrate.adapters.otlp import SpanRecord
from luckrate.service.assemble.assembler import SCAN_SPANS, Assembler, Limits, SpanBudget
from luckrate.service.grade.completed import CompletedTrace
from luckrate.service.process.in_process import AssemblerLoop
from tests import builders
from tests.service.harness import Clock


def span(trace: int, sid: int, parent: int | None = None, name: str = "s") -> SpanRecord:
    """Span ``sid`` of trace ``trace``, starting ``sid`` ns in: start order is id order."""
    return builders.span(sid, parent, name, start=sid, end=sid + 1, trace=trace)


class Rig:
    """An assembler wired to lists, the way app.py wires it to the worker and telemetry."""

    def __init__(self, **limits):
        self.clock = Clock()
        self.out: list[CompletedTrace] = []
        self.counts: Counter = Counter()
        self.released = 0
        self.asm = Assembler(self.out.append, limits=Limits(**limits), clock=self.clock, count=self._count, ledger=self)

    def _count(self, name, value=1, **attrs):
        self.counts[(name, tuple(sorted(attrs.items())))] += value

    def release(self, spans, records=0):  # the assembler's ledger
        self.released += spans + records

    def settle(self, trace_id):
        pass

    def reasons(self) -> list[str]:
        return [t.reason for t in self.out]


LIMITS = dict(root_grace=2.0, idle_timeout=30.0, max_trace_age=300.0, max_spans_per_trace=100)

# (case, spans added at t=0, seconds advanced, expected completion reasons)
CASES = [
    ("root ended, grace not over", [span(1, 1)], 1.9, []),
    ("root ended, grace over", [span(1, 1)], 2.1, ["root_ended"]),
    ("no root, short of idle", [span(1, 2, parent=1)], 29.0, []),
    ("no root, idle", [span(1, 2, parent=1)], 30.1, ["idle"]),
    ("two traces", [span(1, 1), span(2, 2, parent=9)], 30.1, ["root_ended", "idle"]),
]


@pytest.mark.parametrize("case, spans, advance, expected", CASES, ids=[c[0] for c in CASES])
def test_completion(case, spans, advance, expected):
    rig = Rig(**LIMITS)
    rig.asm.add(spans)
    rig.clock.advance(advance)
    rig.asm.expire()
    assert rig.reasons() == expected


def test_a_new_span_restarts_the_quiet_period():
    rig = Rig(**LIMITS)
    rig.asm.add([span(1, 1)])
    rig.clock.advance(1.5)
    rig.asm.add([span(1, 2, parent=1)])
    rig.clock.advance(1.5)
    assert rig.asm.expire() == 0
    rig.clock.advance(0.6)
    assert rig.asm.expire() == 1
    assert len(rig.out[0].spans) == 2


def test_max_age_wins_over_a_trace_that_keeps_talking():
    rig = Rig(root_grace=2.0, idle_timeout=30.0, max_trace_age=10.0)
    for i in range(12):
        rig.asm.add([span(1, 10 + i, parent=1)])
        rig.clock.advance(1.0)
        rig.asm.expire()
    assert rig.reasons() == ["max_age"]
    assert len(rig.out[0].spans) == 10


def test_max_spans_completes_at_once_and_later_spans_are_late():
    rig = Rig(max_spans_per_trace=3)
    rig.asm.add([span(1, i, parent=99) for i in range(1, 6)])
    assert rig.reasons() == ["max_spans"]
    assert len(rig.out[0].spans) == 3
    assert rig.counts[("luckrate.spans.late", ())] == 2
    assert rig.released == 2


def test_duplicates_are_counted_once_and_released():
    rig = Rig(**LIMITS)
    batch = [span(1, 1), span(1, 2, parent=1)]
    rig.asm.add(batch)
    rig.asm.add(batch)  # the load-balancing exporter's retry resends the whole batch
    rig.clock.advance(3)
    rig.asm.expire()
    assert [len(t.spans) for t in rig.out] == [2]
    assert rig.counts[("luckrate.spans.duplicate", ())] == 2
    assert rig.released == 2


def test_a_span_after_the_verdict_is_late_not_a_new_trace():
    rig = Rig(**LIMITS)
    rig.asm.add([span(1, 1)])
    rig.clock.advance(3)
    rig.asm.expire()
    rig.asm.add([span(1, 7, parent=1)])
    rig.clock.advance(60)
    rig.asm.expire()
    assert rig.reasons() == ["root_ended"]
    assert rig.counts[("luckrate.spans.late", ())] == 1
    assert rig.asm.active == 0


def test_late_memory_is_bounded():
    rig = Rig(late_memory=2, **LIMITS)
    for t in (1, 2, 3):
        rig.asm.add([span(t, 1)])
        rig.clock.advance(3)
        rig.asm.expire()
    rig.asm.add([span(1, 5, parent=1)])  # trace 1 was forgotten: its straggler starts a new trace
    assert rig.asm.active == 1
    assert rig.counts[("luckrate.spans.late", ())] == 0


def test_drain_completes_everything_with_reason_shutdown():
    rig = Rig(**LIMITS)
    rig.asm.add([span(1, 1), span(2, 5, parent=4), span(3, 9)])
    assert rig.asm.drain() == 3
    assert rig.reasons() == ["shutdown"] * 3
    assert rig.counts[("luckrate.traces.completed", (("reason", "shutdown"),))] == 3
    assert rig.counts[("luckrate.traces.active", ())] == 0


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=6), st.randoms(use_true_random=False))
def test_split_out_of_order_requests_give_the_same_trace(n_requests, rnd: random.Random):
    """Spans of one trace split over several requests, shuffled and partly resent, assemble to the same set."""
    spans = [span(7, 1, name="root")] + [span(7, i, parent=1, name=f"t{i}") for i in range(2, 12)]
    one = Rig(**LIMITS)
    one.asm.add(spans)
    one.asm.drain()
    shuffled = spans[:]
    rnd.shuffle(shuffled)
    many = Rig(**LIMITS)
    cuts = sorted(rnd.sample(range(1, len(spans)), n_requests - 1))
    for lo, hi in zip([0] + cuts, cuts + [len(spans)]):
        many.asm.add(shuffled[lo:hi])
        many.asm.add(shuffled[lo:hi][:1])  # a resend
        many.clock.advance(0.5)
        many.asm.expire()
    many.asm.drain()
    assert len(many.out) == 1
    assert sorted(many.out[0].spans, key=lambda s: s.span_id) == sorted(one.out[0].spans, key=lambda s: s.span_id)


@pytest.mark.parametrize("n", [3, SCAN_SPANS, SCAN_SPANS + 1, 3 * SCAN_SPANS])
def test_duplicates_are_found_in_small_and_large_traces(n):
    """Up to SCAN_SPANS spans a trace compares ids one by one, beyond it keeps a set: both find every
    duplicate, whenever it comes, and nothing else."""
    rig = Rig(**{**LIMITS, "max_spans_per_trace": 1000})
    spans = [span(3, 1)] + [span(3, i, parent=1) for i in range(2, n + 1)]
    rig.asm.add(spans[: n // 2])
    rig.asm.add(spans[n // 2 :] + spans[:2] + spans[-1:])  # the rest, then resends of the first two and the last
    rig.asm.add(spans[1:3])
    rig.asm.drain()
    assert sorted(s.span_id for s in rig.out[0].spans) == sorted(s.span_id for s in spans)
    assert rig.counts[("luckrate.spans.duplicate", ())] == 5
    assert rig.released == 5


def test_packed_spans_are_handed_on_as_records():
    """The service buffers PackedSpans; the grader gets the SpanRecords the adapters read, the same as
    when records are buffered."""
    from luckrate import demo
    from luckrate.adapters.otlp import records_from_request
    from luckrate.adapters.otlp.spans import PackedSpan
    from tests.service.harness import record_runs, request_of

    req = request_of(record_runs([demo.make_run("tainted", 3, "support-agent")]))
    packed, _ = records_from_request(req, packed=True)
    records, _ = records_from_request(req)
    assert packed and all(type(p) is PackedSpan for p in packed)
    a, b = Rig(**LIMITS), Rig(**LIMITS)
    a.asm.add(packed)
    b.asm.add(records)
    a.asm.drain()
    b.asm.drain()
    assert [type(s) for s in a.out[0].spans] == [SpanRecord] * len(records)
    assert a.out[0].spans == b.out[0].spans
    assert a.out[0].root_span_id == b.out[0].root_span_id


def test_budget_refuses_past_its_limit_and_recovers():
    budget = SpanBudget(10)
    assert budget.try_acquire(6)
    assert not budget.try_acquire(5)
    assert budget.try_acquire(4)
    budget.release(7)
    assert budget.used == 3 and budget.try_acquire(7)


def test_loop_lifecycle_start_consume_shutdown():
    out: list[CompletedTrace] = []
    loop = AssemblerLoop(Assembler(out.append, limits=Limits(root_grace=3600)), tick=0.01)
    loop.start()
    loop.submit([span(1, 1), span(1, 2, parent=1)])
    loop.submit([span(2, 3)])
    assert loop.stop(timeout=10)
    assert sorted((t.trace_id[-1], len(t.spans), t.reason) for t in out) == [(1, 2, "shutdown"), (2, 1, "shutdown")]


def test_loop_shutdown_without_start():
    out: list[CompletedTrace] = []
    loop = AssemblerLoop(Assembler(out.append))
    loop.submit([span(1, 1)])
    assert loop.stop(timeout=1)
    assert [t.reason for t in out] == ["shutdown"]


@functools.lru_cache(maxsize=1)
def _real_records() -> tuple[SpanRecord, ...]:
    """One tainted run recorded with the OTel SDK, as span records (recorded once per session)."""
    from luckrate import demo
    from luckrate.adapters.otlp import records_from_request
    from tests.service.harness import record_runs, request_of

    records, _ = records_from_request(request_of(record_runs([demo.make_run("tainted", 3, "support-agent")])))
    return tuple(records)


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(min_value=2, max_value=8))
def test_split_shuffled_real_spans_give_the_same_trajectory(rnd: random.Random, n_requests: int):
    """Real recorded spans of one run, split over requests in random order: the same Trajectory as one
    in-order request (the adapter orders by time, the assembler only collects)."""
    from luckrate.adapters.otlp import OutputRule, trajectory_from_spans

    real = _real_records()
    in_order = Rig(**LIMITS)
    in_order.asm.add(real)
    in_order.asm.drain()
    shuffled = list(real)
    rnd.shuffle(shuffled)
    split = Rig(**LIMITS)
    cuts = sorted(rnd.sample(range(1, len(shuffled)), min(n_requests, len(shuffled)) - 1))
    for lo, hi in zip([0] + cuts, cuts + [len(shuffled)]):
        split.asm.add(shuffled[lo:hi])
        split.clock.advance(0.5)
        split.asm.expire()
    split.asm.drain()
    rule = OutputRule()
    expected = trajectory_from_spans(in_order.out[0].spans, rule)
    assert expected.steps  # the run really has tool calls to order
    assert trajectory_from_spans(split.out[0].spans, rule) == expected


def log(trace: int, sid: int = 0, name: str = "gen_ai.choice"):
    from luckrate.adapters.otlp import LogEvent, SpanEvent

    return LogEvent(trace.to_bytes(16, "big"), sid.to_bytes(8, "big") if sid else b"", SpanEvent(name, 0, ()))


def count(rig: Rig, name: str, **attrs) -> int:
    return rig.counts[(name, tuple(sorted(attrs.items())))]


def test_records_that_arrive_first_wait_for_their_spans_and_join_them():
    rig = Rig(**LIMITS)
    rig.asm.add_logs([log(1, 2), log(1, 2, "gen_ai.user.message")])
    rig.clock.advance(1)
    rig.asm.add([span(1, 1), span(1, 2, parent=1)])
    rig.clock.advance(2.1)
    rig.asm.expire()
    (trace,) = rig.out
    assert trace.reason == "root_ended" and len(trace.logs) == 2
    child = next(s for s in trace.spans if s.span_id == (2).to_bytes(8, "big"))
    assert [e.name for e in child.events] == ["gen_ai.choice", "gen_ai.user.message"]
    assert count(rig, "luckrate.log_records.assembled") == 2
    assert rig.released == 0  # the grader releases what it grades


def test_records_keep_their_trace_open_as_spans_do():
    rig = Rig(**LIMITS)
    rig.asm.add([span(1, 1)])
    rig.clock.advance(1.5)
    rig.asm.add_logs([log(1, 1)])
    rig.clock.advance(1.5)
    rig.asm.expire()
    assert rig.out == []  # 3 s after the root, 1.5 s after the record
    rig.clock.advance(0.6)
    rig.asm.expire()
    assert len(rig.out) == 1 and len(rig.out[0].logs) == 1


def test_records_whose_spans_never_come_are_dropped_released_and_leave_no_trace():
    rig = Rig(**LIMITS)
    rig.asm.add_logs([log(1), log(1), log(2)])
    rig.clock.advance(30.1)
    rig.asm.expire()
    assert rig.out == [] and rig.asm.active == 0
    assert count(rig, "luckrate.log_records.dropped", reason="no_spans") == 3 and rig.released == 3
    assert count(rig, "luckrate.traces.active") == 0
    assert not any(name == "luckrate.traces.completed" for name, _ in rig.counts)
    rig.asm.add([span(1, 1)])  # the trace's spans after all: a trace of their own, not late
    rig.clock.advance(2.1)
    rig.asm.expire()
    assert len(rig.out) == 1 and rig.out[0].logs == ()


def test_records_after_the_verdict_are_late_and_over_the_limit_are_dropped():
    rig = Rig(**{**LIMITS, "max_spans_per_trace": 3})
    rig.asm.add_logs([log(1, 1)] * 5)
    assert count(rig, "luckrate.log_records.dropped", reason="over_limit") == 2 and rig.released == 2
    rig.asm.add([span(1, 1)])
    rig.clock.advance(2.1)
    rig.asm.expire()
    assert len(rig.out[0].logs) == 3
    rig.asm.add_logs([log(1, 1)])
    assert count(rig, "luckrate.log_records.dropped", reason="late") == 1 and rig.released == 3


def test_shutdown_drains_records_with_their_traces_and_drops_those_without():
    rig = Rig(**LIMITS)
    rig.asm.add([span(1, 1)])
    rig.asm.add_logs([log(1, 1), log(2)])
    assert rig.asm.drain() == 2
    assert [len(t.logs) for t in rig.out] == [1]
    assert count(rig, "luckrate.log_records.dropped", reason="no_spans") == 1


def test_the_loop_takes_log_batches_beside_span_batches():
    out: list[CompletedTrace] = []
    loop = AssemblerLoop(Assembler(out.append, limits=Limits(**LIMITS)))
    loop.submit_logs([log(1, 1)])
    loop.submit([span(1, 1)])
    assert loop.stop()
    assert [len(t.logs) for t in out] == [1]
