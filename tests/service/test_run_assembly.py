"""Runs across traces in the service (run_assembly.py) on a fake clock: completed traces tied by span links or
a conversation id are graded as one run, whatever order they complete in; and the bad inputs stay bounded
and counted: a cycle of links, a link to a trace that never arrives, a conversation that never ends, a
trace that comes after its run was graded. Before, ``luckrate serve`` graded each trace alone."""

from __future__ import annotations

from collections import Counter

import pytest

from luckrate.adapters.otlp.runs import TraceTies
from luckrate.service.assemble.run_assembly import RunAssembler, RunLimits
from luckrate.service.grade.completed import CompletedRun, CompletedTrace
from tests.builders import span
from tests.service.harness import Clock


def tid(n: int) -> bytes:
    return n.to_bytes(16, "big")


def trace(n: int, links: tuple[int, ...] = (), conversation: str | None = None) -> CompletedTrace:
    ties = None
    if links or conversation:
        ties = TraceTies(
            {tid(t): (n.to_bytes(8, "big"), t.to_bytes(8, "big")) for t in links},
            [conversation] if conversation else [],
        )
    return CompletedTrace(tid(n), (span(n, trace=n),), "root_ended", 0.0, (), ties)


class Rig:
    def __init__(self, **kw):
        self.clock = Clock()
        self.out: list[CompletedRun] = []
        self.counts: Counter = Counter()
        kw.setdefault("wait", 5.0)
        kw.setdefault("max_age", 60.0)
        self.runs = RunAssembler(self.out.append, RunLimits(**kw), clock=self.clock, count=self._count)

    def _count(self, name, value=1, **attrs):
        self.counts[(name, *attrs.values())] += value

    def add(self, *traces: CompletedTrace) -> None:
        for t in traces:
            self.runs.add(t)

    def after(self, seconds: float) -> list[list[int]]:
        self.clock.advance(seconds)
        self.runs.expire()
        out = [sorted(int.from_bytes(t.trace_id, "big") for t in run.traces) for run in self.out]
        self.out.clear()
        return out


ORDERS = [(1, 2, 3), (3, 2, 1), (2, 3, 1), (1, 3, 2)]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "-".join(map(str, o)))
def test_linked_traces_are_one_run_in_any_completion_order(order):
    # 1 <- 2 <- 3 (each links to the one before, as AutoGen's deliveries do); 9 stands alone.
    made = {1: trace(1), 2: trace(2, links=(1,)), 3: trace(3, links=(2,))}
    rig = Rig()
    rig.add(*(made[n] for n in order), trace(9))
    assert rig.after(4.9) == []
    assert sorted(rig.after(0.2)) == [[1, 2, 3], [9]]
    assert rig.counts[("luckrate.runs.assembly", "traces_joined")] == 2
    assert rig.counts[("luckrate.runs.completed", "quiet")] == 2
    assert rig.runs.active == 0 and rig.counts[("luckrate.runs.active",)] == 0


def test_each_trace_that_joins_restarts_the_wait():
    rig = Rig()
    rig.add(trace(1))
    assert rig.after(4) == []
    rig.add(trace(2, links=(1,)))
    assert rig.after(4) == []
    assert rig.after(1.1) == [[1, 2]]


def test_a_cycle_of_links_is_one_run():
    rig = Rig()
    rig.add(trace(1, links=(2,)), trace(2, links=(1,)), trace(3, links=(3, 1)))
    assert rig.after(5.1) == [[1, 2, 3]]
    assert rig.counts[("luckrate.runs.assembly", "links_missing")] == 0


def test_a_link_to_a_trace_that_never_arrives_is_counted_when_the_run_is_graded():
    rig = Rig()
    rig.add(trace(1), trace(2, links=(1, 77)))
    assert rig.after(5.1) == [[1, 2]]  # no longer than any other run's wait
    assert rig.counts[("luckrate.runs.assembly", "links_missing")] == 1


def test_two_traces_waiting_for_the_same_trace_are_one_run():
    rig = Rig()
    rig.add(trace(2, links=(1,)), trace(3, links=(1,)))
    rig.add(trace(1))
    assert rig.after(5.1) == [[1, 2, 3]]
    assert rig.counts[("luckrate.runs.assembly", "links_missing")] == 0


def test_a_trace_after_its_run_was_graded_is_late_not_graded_alone():
    rig = Rig()
    rig.add(trace(1))
    assert rig.after(5.1) == [[1]]
    rig.add(trace(2, links=(1,)))
    [late] = rig.out
    assert late.late and rig.counts[("luckrate.runs.assembly", "late_traces")] == 1
    assert rig.runs.active == 0


def test_graded_traces_remembered_are_bounded():
    rig = Rig(memory=3)
    for n in range(1, 6):
        rig.add(trace(n))
    rig.after(5.1)
    rig.add(trace(10, links=(1,)))  # 1 was forgotten: its link is missing, not late
    assert rig.after(5.1) == [[10]]
    assert rig.counts[("luckrate.runs.assembly", "late_traces")] == 0
    assert rig.counts[("luckrate.runs.assembly", "links_missing")] == 1


def test_a_conversation_that_never_ends_is_graded_in_parts():
    rig = Rig(conversation=True, max_traces=3)
    for n in range(1, 8):
        rig.add(trace(n, conversation="c1"))
        rig.clock.advance(1)
        rig.runs.expire()
    assert [len(r.traces) for r in rig.out] == [3, 3]
    assert rig.counts[("luckrate.runs.completed", "max_traces")] == 2
    assert rig.after(5.1) == [[1, 2, 3], [4, 5, 6], [7]]


def test_a_run_that_keeps_growing_is_graded_at_its_max_age():
    rig = Rig(conversation=True, wait=5.0, max_age=20.0)
    for n in range(1, 30):
        rig.add(trace(n, conversation="c1"))
        rig.clock.advance(1)
        rig.runs.expire()
    assert [len(r.traces) for r in rig.out] == [20]  # the traces of its first 20 s
    assert rig.counts[("luckrate.runs.completed", "max_age")] == 1


def test_conversation_ids_are_ignored_unless_asked():
    rig = Rig()
    rig.add(trace(1, conversation="c1"), trace(2, conversation="c1"))
    assert sorted(rig.after(5.1)) == [[1], [2]]


def test_drain_grades_every_held_run():
    rig = Rig()
    rig.add(trace(1), trace(2, links=(1,)), trace(3))
    assert rig.runs.drain() == 2
    assert sorted(sorted(int.from_bytes(t.trace_id, "big") for t in r.traces) for r in rig.out) == [[1, 2], [3]]
    assert rig.counts[("luckrate.runs.completed", "shutdown")] == 2
    assert rig.runs.active == 0


def linked_request():
    from tests.builders import Recorder, linked_run
    from tests.service.harness import request_of

    rec = Recorder()
    linked_run(rec, missing=True)
    return request_of(rec.exporter.get_finished_spans())


@pytest.mark.parametrize("runs_by", ["links", "conversation"])
def test_intake_hands_over_the_links_it_read_and_again_on_replay(runs_by):
    from luckrate.service.assemble.assembler import SpanBudget
    from luckrate.service.assemble.intake import Handover, Intake, IntakeOptions
    from luckrate.service.assemble.wal_format import TRACES

    batches: list = []
    counts: Counter = Counter()
    intake = Intake(
        Handover(batches.append),
        SpanBudget(1000),
        lambda n, v=1, **a: counts.update({n: v}),
        IntakeOptions(runs_by=runs_by),
    )
    req = linked_request()
    intake.accept(req, "grpc")
    intake.replay(TRACES, req.SerializeToString(), lambda t: True)
    first, replayed = batches
    assert first.ties and first.ties.keys() == replayed.ties.keys()
    # The delivery trace links to the agent's trace and to one never exported; the agent's to create_agent's.
    assert sorted(len(t.linked) for t in first.ties.values()) == [1, 2]
    assert {r.trace_id for r in first} >= first.ties.keys()


def test_intake_reads_no_links_when_each_trace_is_a_run():
    from luckrate.service.assemble.assembler import SpanBudget
    from luckrate.service.assemble.intake import Handover, Intake

    batches: list = []
    Intake(Handover(batches.append), SpanBudget(1000), lambda *a, **k: None).accept(linked_request(), "grpc")
    assert getattr(batches[0], "ties", None) is None
