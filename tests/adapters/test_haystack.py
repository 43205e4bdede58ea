"""Haystack's own tracer: every Haystack run was refused (no span of a known convention), and a failing
tool, whose span keeps status UNSET, must still read as failed from ``haystack.tool.error``. Captures are
real Haystack Agents on its MockChatGenerator (tests/testdata/haystack/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from luckrate.adapters.otlp import read_otlp
from luckrate.adapters.otlp.conventions.haystack import _from_repr, messages
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from tests.builders import span
from tests.scenarios import FAILING_LOOP

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "testdata" / "haystack"
SPEC = spec_for(load_specs(ROOT / "examples" / "spec.py"), None)


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("mode", ["agent", "pipeline"])
def test_a_failing_tool_is_read_from_haystack_tool_error(mode, content):
    path = DATA / f"failing_loop.{mode}{'' if content else '.nocontent'}.haystack.otlp"
    [traj] = read_otlp(path.read_bytes(), str(path))
    assert [s.tool for s in traj.steps] == [c.tool for c in FAILING_LOOP.calls]
    assert [s.failed for s in traj.steps] == [True, True, True, False]
    if content:
        assert traj.steps[0].error.endswith("Error: order service unavailable")
    assert {(v.check, v.tool) for v in grade(traj, SPEC).violations} == FAILING_LOOP.expected


REPRS = [
    (
        "a model input",
        "{'messages': [ChatMessage(_role=<ChatRole.USER: 'user'>, _content=[TextContent(text='hi')], "
        "_name=None, _meta={})], 'tools': [Tool(name='t', function=<function f at 0x1>)]}",
        {
            "messages": [
                {
                    "__type": "ChatMessage",
                    "_role": "user",
                    "_content": [{"__type": "TextContent", "text": "hi"}],
                    "_name": None,
                    "_meta": {},
                }
            ]
        },
    ),
    ("an expression is parsed, never run", "{'messages': [__import__('os').system('true')]}", None),
    ("attribute access is no plain value", "{'messages': [a.b]}", None),
    ("not Python", "{'messages': [ChatMessage(", None),
    ("negative numbers", "{'messages': [], 'n': -1}", {"messages": [], "n": -1}),
]


@pytest.mark.parametrize("name, text, value", REPRS, ids=[r[0] for r in REPRS])
def test_model_input_repr_is_parsed_not_evaluated(name, text, value):
    assert _from_repr(text) == value


def test_a_model_span_without_content_has_no_messages():
    rec = span(1, None, "haystack.agent.step.llm", 0)
    assert messages(rec, "input") is None and messages(rec, "output") is None


@pytest.mark.parametrize(
    "text",
    ["{'messages': [-'x']}", "{['a']: 1}", "{'messages': [{'a': 1}: 2]}", "{'messages': " * 2000],
    ids=["negated text", "a list as a key", "not an expression", "nested too deep"],
)
def test_a_repr_that_is_no_plain_value_reads_as_nothing_never_raises(text):
    # Span text is the sender's: -"x" and a list used as a key raised TypeError out of the reader.
    from luckrate.adapters.otlp.conventions.haystack import _from_repr

    assert _from_repr(text) is None
