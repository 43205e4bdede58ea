"""The point of the project: one spec, unchanged, gives the same verdict on every framework and convention.

For each scenario (clean; forbidden tool; injected address sent by a privileged tool; the same address
also given by the user) the real frameworks run on scripted fake chat models — LangGraph as a message
list, LangGraph under the OpenInference and the Traceloop instrumentations, the OpenAI Agents SDK under
the GenAI-conventions instrumentation — and captured real runs are read for CrewAI, n8n and the
frameworks that cannot run here (tests/testdata/<framework>/, each with a README and its capture
script: the JS ones by a pinned Node script), and the OpenAI client instrumentation whose messages travel
in log records, read with its logs. Every source must yield exactly the scenario's
expected (check, tool) pairs under examples/spec.py, with content capture on; with it off, the same
tools in the same order and the same verdicts but taint (which needs the values), and no step lost.

Hand-written tool loops over the model clients (no framework, no tool spans: the steps come from the model's
messages) and the same loops running their tools over MCP are read from committed captures too, with the
failing-loop scenario: a tool failing three times must read as failures where the source marks them.

The policy scenarios (a confirmation given in a second user turn, a cancel without one, a refund of
another order than the one looked up) run live on every source that runs here; CrewAI and n8n are
captured outside CI and run where a capture exists: CrewAI has all but the confirmation given in a
second user turn (a crew task takes no second user message), n8n none yet. The rest are skipped, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from luckrate.adapters import crewai, n8n
from luckrate.adapters.langgraph import trajectory_from_messages
from luckrate.adapters.otlp import read_otlp, read_otlp_files
from luckrate.core.grade import grade
from luckrate.core.spec import spec_for
from luckrate.core.spec_loader import load_specs
from luckrate.core.step import Trajectory
from tests.frameworks import langgraph_agent, openai_agents, pydantic_ai_agent, smolagents_agent
from tests.scenarios import FAILING_LOOP, POLICY_SCENARIOS, SCENARIOS, Ask, Scenario

ROOT = Path(__file__).resolve().parents[1]
TESTDATA = ROOT / "tests" / "testdata"
SPEC = spec_for(load_specs(ROOT / "examples" / "spec.py"), None)


def _one(runs: list[Trajectory]) -> Trajectory:
    assert len(runs) == 1, f"expected one run, got {len(runs)}"
    return runs[0]


def langgraph_messages(s: Scenario) -> Trajectory:
    return trajectory_from_messages(langgraph_agent.run_scenario(s), id=s.name, output_ok=True)


def langgraph_openinference(s: Scenario) -> Trajectory:
    return _one(read_otlp(langgraph_agent.spans_for(s, "openinference"), s.name))


def langgraph_traceloop(s: Scenario) -> Trajectory:
    return _one(read_otlp(langgraph_agent.spans_for(s, "traceloop"), s.name))


def openai_agents_genai(s: Scenario) -> Trajectory:
    return _one(read_otlp(openai_agents.spans_for(s), s.name))


def _capture(source: str, s: Scenario) -> Path:
    path = TESTDATA / source / f"{s.name}.json"
    if not path.exists() and s in POLICY_SCENARIOS:
        pytest.skip(f"no {source} capture of {s.name!r} (see tests/testdata/{source}/README.md)")
    return path


def crewai_capture(s: Scenario) -> Trajectory:
    path = _capture("crewai", s)
    return _one(crewai.read_file(path.read_bytes(), str(path)))


def n8n_capture(s: Scenario) -> Trajectory:
    path = _capture("n8n", s)
    return _one(n8n.read_file(path.read_bytes(), str(path)))


def pydantic_ai_live(version: int) -> Callable[..., Trajectory]:
    def run(s: Scenario, content: bool = True) -> Trajectory:
        return _live(
            ("pydantic-ai", version, s.name, content),
            lambda: pydantic_ai_agent.spans_for(s, version=version, capture=content),
        )

    run.__name__ = f"pydantic_ai_v{version}"
    return run


def smolagents_live(s: Scenario, content: bool = True) -> Trajectory:
    # A smolagents run takes one task; a reply continues the same agent as a "New task" whose history holds
    # the agent's question as its final_answer call (tests/frameworks/smolagents_agent.py).
    return _live(("smolagents", s.name, content), lambda: smolagents_agent.spans_for(s, capture=content))


_LIVE: dict[tuple, Trajectory] = {}


def _live(key: tuple, run: Callable[[], bytes]) -> Trajectory:
    """Each live run once per session, however many tests read it (``key`` names it; ``run`` is
    called only the first time)."""
    if key not in _LIVE:
        _LIVE[key] = _one(read_otlp(run(), str(key)))
    return _LIVE[key]


def otlp_file(framework: str, name: str, mode: str | None = None, content: bool = True) -> Path:
    """``tests/testdata/<framework>/<name>[.<mode>][.nocontent].<framework>.otlp``"""
    parts = [name, mode, None if content else "nocontent", framework, "otlp"]
    return TESTDATA / framework / ".".join(p for p in parts if p)


def otlp_capture(framework: str, mode: str | None = None) -> Callable[..., Trajectory]:
    """Committed OTLP captures of a framework (in one of its telemetry modes), content on or off."""

    def read(s: Scenario, content: bool = True) -> Trajectory:
        path = otlp_file(framework, s.name, mode, content)
        if not path.exists() and s in POLICY_SCENARIOS:
            pytest.skip(f"no {framework} capture of {s.name!r} yet (captured by its script, outside CI)")
        return _one(read_otlp(path.read_bytes(), str(path)))

    read.__name__ = f"{framework}_{mode}_capture"
    return read


OTLP_SOURCES = {
    "pydantic-ai-v1": otlp_capture("pydantic-ai", "v1"),  # pydantic-ai 1.x only: captured
    **{f"pydantic-ai-v{v}": pydantic_ai_live(v) for v in pydantic_ai_agent.VERSIONS},
    "vercel-ai-sdk": otlp_capture("vercel-ai"),
    "vercel-ai-sdk+traceloop-node": otlp_capture("vercel-ai-traceloop"),  # Traceloop's Node SDK span processor
    "langchainjs+openinference": otlp_capture("langchainjs"),
    **{f"google-adk-{m}": otlp_capture("google-adk", m) for m in ("v1", "v2", "v2-experimental")},
    "llama-index+openinference": otlp_capture("llama-index"),
    "smolagents+openinference": smolagents_live,
    **{f"strands-{m}": otlp_capture("strands", m) for m in ("default", "latest")},
    **{f"haystack-{m}": otlp_capture("haystack", m) for m in ("agent", "pipeline")},
}
"""OTLP sources that record the agent, the user input and call ids, run live or read from committed
captures, with content on and off."""
UNNAMED_AGENTS = {"haystack-agent"}
"""Sources whose spans tie no span to the agent running it (see docs/instrumentations.md)."""


def openai_client_capture(mode: str) -> Callable[..., Trajectory]:
    """The contrib OpenAI instrumentation around an application's own tool loop (no agent span, so not
    among OTLP_SOURCES): spans and log records captured together, read together."""

    def read(s: Scenario) -> Trajectory:
        stem = TESTDATA / "openai-v2" / f"{s.name}.{mode}.openai-v2"
        traces, logs = Path(f"{stem}.traces.otlp"), Path(f"{stem}.logs.otlp")
        if not traces.exists() and s in POLICY_SCENARIOS:
            pytest.skip(f"no openai-v2 capture of {s.name!r} yet (captured by its script, outside CI)")
        return _one(read_otlp_files([(traces.read_bytes(), str(traces))], [(logs.read_bytes(), str(logs))]))

    read.__name__ = f"openai_v2_{mode}_capture"
    return read


LOGS_SOURCES = {
    f"openai-client+{m}": openai_client_capture(m)
    for m in ("legacy", "latest.event_only", "latest.span_and_event", "latest.span_only")
}
"""Sources whose messages travel in log records (all but span_only, the same content on the spans)."""

MESSAGE_SOURCES = {
    "openai-v2-tool-loop": otlp_capture("openai-v2", "latest"),
    "openai-v2-tool-loop-span-and-event": otlp_capture("openai-v2", "latest-events"),  # off: EVENT_ONLY
    "mcp-sdk+openai-v2": otlp_capture("mcp", "sdk"),
    "mcp-sdk-stdio+openai-v2": otlp_capture("mcp", "sdk-stdio"),  # the server's spans under their own resource
    "mcp-traceloop+openai-v2": otlp_capture("mcp", "traceloop"),
    **{f"anthropic+traceloop-{m}-tool-loop": otlp_capture("anthropic", m) for m in ("current", "legacy")},
}
"""Hand-written tool loops over the official OpenAI and Anthropic clients (no agent framework, so no agent
span), captured with content on and off: the tools run by the loop itself (no tool spans: the steps come
from the model's messages) or through an MCP session (the MCP SDK's own client and server spans;
Traceloop's MCP spans)."""
NAMES_WITHOUT_CONTENT = {"mcp-sdk+openai-v2", "mcp-sdk-stdio+openai-v2", "mcp-traceloop+openai-v2"}
"""Message sources that record which tools ran with content off: the MCP spans. The OpenAI instrumentation
records tool calls only in the messages, which content off leaves out."""
CANNOT_MARK_FAILURES = {
    "openai-v2-tool-loop",
    "openai-v2-tool-loop-span-and-event",
    "anthropic+traceloop-current-tool-loop",
}
"""Sources whose records lose a failing tool's marker: chat completions' tool message has no error field
(a loop can only say so in words, which are not read), and Traceloop's Anthropic instrumentation since it
writes the GenAI conventions' messages drops the ``tool_result`` block's ``is_error`` (its legacy flattened
prompts kept it)."""

TOOL_CLASS_NAMES = {
    "langchainjs+traceloop-node": otlp_capture("langchainjs-traceloop"),
    "langchainjs+traceloop-node-class-tools": otlp_capture("langchainjs-traceloop", "classtools"),
}
"""Sources that name every tool span after the tool's class (Traceloop's Node SDK over LangGraph.js:
``execute_tool DynamicStructuredTool`` for a ``tool()``, ``execute_tool LookupOrderTool`` for a class of the
application's): the tool's name comes from the ToolMessage it returned or the model's request, both content;
with content off the steps keep the class name."""
CLASS_TOOLS = {
    "lookup_order": "LookupOrderTool",
    "issue_refund": "IssueRefund",
    "fetch_webpage": "FetchWebpage",
    "send_email": "SendEmailTool",
    "delete_account": "DeleteAccountTool",
    "escalate_to_human": "EscalateToHuman",
    "cancel_order": "CancelOrderTool",
}
"""The class each tool of the class-tools captures is named by on its span (capture.mjs, ``classTools``)."""

NODE_SDK_CONTENT_OFF = {"langchainjs+traceloop-node-sdk": otlp_capture("langchainjs-traceloop", "sdk-nocontent")}
"""LangGraph.js under Traceloop's Node SDK itself (``traceloop.initialize({traceContent: false})``): the SDK does
not pass the setting to its LangChain instrumentation, so the spans keep their content (tool names resolve)."""

FRAMEWORK_ROOT = {"mastra": otlp_capture("mastra")}
"""Sources whose traces start at the framework's own agent span, so no ``luckrate.output_ok`` is set: Mastra's
exporter (the run's input and answer on its agent_run span, the model's calls on its model_step spans; no
gen_ai.input.messages anywhere), content on and off (``hideInput`` / ``hideOutput``)."""

TASK_SOURCES = {"crewai+openinference": otlp_capture("crewai-openinference")}
"""CrewAI under OpenInference: no span records the user's words; the task's description (in the task span's
output) is the request, as for CrewAI's events. No span carries a call id."""

MODEL_CLIENT_CONTENT = {f"autogen+{m}": otlp_capture("autogen", m) for m in ("openinference", "openai-v2", "traceloop")}
"""AutoGen with content, as deployed: autogen-core's own spans (names and call ids only) with an
instrumentation of the model client underneath that records the content: OpenInference's AutoGen
instrumentation (a TOOL span of its own around each of autogen-core's ``execute_tool`` spans, and the model's
messages), the contrib openai-v2 instrumentation or Traceloop's OpenAI instrumentation (the model's messages
only), content on and off."""

SOURCES: dict[str, Callable[[Scenario], Trajectory]] = {
    "langgraph-messages": langgraph_messages,
    "langgraph+openinference": langgraph_openinference,
    "langgraph+traceloop": langgraph_traceloop,
    "openai-agents+genai-semconv": openai_agents_genai,
    "crewai-events": crewai_capture,
    "n8n-execution": n8n_capture,
    **OTLP_SOURCES,
    **MESSAGE_SOURCES,
    **LOGS_SOURCES,
    **TOOL_CLASS_NAMES,
    **TASK_SOURCES,
    **FRAMEWORK_ROOT,
    **MODEL_CLIENT_CONTENT,
    **NODE_SDK_CONTENT_OFF,
}


@pytest.mark.parametrize("scenario", SCENARIOS + POLICY_SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", SOURCES)
def test_same_verdict_on_every_source(source, scenario):
    traj = SOURCES[source](scenario)
    g = grade(traj, SPEC)
    assert [s.tool for s in traj.steps] == [c.tool for c in scenario.calls]
    # What a source cannot record, its verdict cannot hold: that check must be listed as skipped instead.
    blind = CANNOT_CARRY.get(source, set())
    expected = {(check, tool) for check, tool in scenario.expected if check not in blind}
    assert {(v.check, v.tool) for v in g.violations} == expected
    assert g.path_ok is (not expected)
    for check in blind & {check for check, _ in scenario.expected}:
        assert any(s.startswith(f"{check} (") for s in g.skipped), g.skipped


CANNOT_CARRY = {"crewai-events": {"confirm"}}
"""Checks a source's records cannot support: CrewAI's tool-usage events hold no user messages."""


@pytest.mark.parametrize("source", [s for s in SOURCES if not s.endswith(("-events", "-execution"))])
def test_the_confirmation_is_placed_after_the_question(source):
    # The confirmed run's verdict rests on where the user's "yes" sits: after the agent's question,
    # before the cancel. Every live source must place it there, not just find it.
    scenario = next(s for s in POLICY_SCENARIOS if s.name == "confirmed")
    traj = SOURCES[source](scenario)
    placed = [(m.role, m.text, m.before_step) for m in traj.messages]
    cancel = next(s.index for s in traj.steps if s.tool == "cancel_order")
    assert ("agent", scenario.turns[1].text, cancel) in placed
    assert (
        placed.index(("user", scenario.turns[1].reply, cancel))
        == placed.index(("agent", scenario.turns[1].text, cancel)) + 1
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", OTLP_SOURCES)
def test_content_off_keeps_every_step(source, scenario):
    traj = OTLP_SOURCES[source](scenario, content=False)
    assert traj.content is False and traj.input == ""
    assert [s.tool for s in traj.steps] == [c.tool for turn in scenario.turns for c in turn]
    g = grade(traj, SPEC)
    assert {(v.check, v.tool) for v in g.violations} == {p for p in scenario.expected if p[0] != "taint"}
    assert any(s.startswith("taint") for s in g.skipped)


@pytest.mark.parametrize("scenario", SCENARIOS + POLICY_SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", MESSAGE_SOURCES)
def test_message_sources_keep_the_tools_they_name_with_content_off(source, scenario):
    traj = MESSAGE_SOURCES[source](scenario, content=False)
    assert traj.content is False and traj.input == "" and traj.messages == ()
    named = source in NAMES_WITHOUT_CONTENT
    assert [s.tool for s in traj.steps] == ([c.tool for c in scenario.calls] if named else [])
    if named and scenario in SCENARIOS:  # the policy scenarios' verdicts rest on arguments and messages
        found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
        assert found == {p for p in scenario.expected if p[0] != "taint"}


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("source", MESSAGE_SOURCES)
def test_a_failing_loop_reads_as_failures_not_repeats(source, content):
    # Read from the messages alone, a tool failing three times looked like the same call repeated after it
    # succeeded. A failure marked by the source (the MCP server's isError, as status and error.type on its
    # span; an Anthropic tool_result's is_error) fails the step; the words "Error: ..." in a result never do.
    traj = MESSAGE_SOURCES[source](FAILING_LOOP, content=content)
    if not content and source not in NAMES_WITHOUT_CONTENT:
        assert traj.steps == ()
        return
    assert [s.tool for s in traj.steps] == [c.tool for c in FAILING_LOOP.calls]
    found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
    if source in CANNOT_MARK_FAILURES:
        assert [s.failed for s in traj.steps] == [False] * 4
        assert found == {("repeat", "lookup_order")}
    else:
        assert [s.failed for s in traj.steps] == [c.error is not None for c in FAILING_LOOP.calls]
        assert found == FAILING_LOOP.expected


CONTENT_IN_LOGS_ONLY = {"openai-v2-tool-loop-default": otlp_capture("openai-v2", "default")}
"""The OpenAI instrumentation on its default (v1.30) conventions writes content to log events only, with
content on or off: the spans name no tool call (docs/instrumentations.md)."""


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", CONTENT_IN_LOGS_ONLY)
def test_content_in_log_events_only_leaves_the_spans_without_steps(source, scenario, content):
    traj = CONTENT_IN_LOGS_ONLY[source](scenario, content=content)
    assert (traj.steps, traj.content, traj.input, traj.messages, traj.output_ok) == ((), False, "", (), True)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", MESSAGE_SOURCES)
def test_message_sources_name_input_calls_and_ids(source, scenario):
    traj = MESSAGE_SOURCES[source](scenario)
    assert (traj.agent, traj.input, traj.output_ok, traj.content) == (None, scenario.user, True, True)
    ids = [f"call_{i}_{n}" for i, turn in enumerate(scenario.turns) for n, _ in enumerate(turn)]
    assert [(s.tool, s.args, s.result, s.call_id) for s in traj.steps] == [
        (c.tool, c.args, c.result, call_id) for c, call_id in zip(scenario.calls, ids)
    ]
    models = sorted(traj.model_turns)
    assert list(traj.model_turns) == models and len(set(models)) == len(scenario.turns)


STRUCTURE_ONLY = {"autogen-core": otlp_capture("autogen"), "autogen-core-runtime": otlp_capture("autogen", "split")}
"""Sources whose spans never hold arguments, results or the user's words, whatever is configured:
autogen-core's tracing records tool names and call ids only (docs/instrumentations.md). ``-runtime``: a team
on autogen-core's runtime with no span around the run, as deployed: the run spread over 14-16 traces tied
only by span links, read as one run (and nothing sets ``luckrate.output_ok``)."""


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", STRUCTURE_ONLY)
def test_structure_only_sources_skip_taint_rather_than_pass_it(source, scenario):
    traj = STRUCTURE_ONLY[source](scenario)
    assert traj.content is False and traj.agent == "support_agent"
    assert [(s.tool, s.call_id) for s in traj.steps] == [
        (c.tool, f"call_{i}_{n}") for i, turn in enumerate(scenario.turns) for n, c in enumerate(turn)
    ]
    g = grade(traj, SPEC)
    assert {(v.check, v.tool) for v in g.violations} == {p for p in scenario.expected if p[0] != "taint"}
    assert any(s.startswith("taint") for s in g.skipped)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", OTLP_SOURCES)
def test_otlp_source_names_agent_input_and_calls(source, scenario):
    traj = OTLP_SOURCES[source](scenario)
    script = [c for turn in scenario.turns for c in turn]
    agent = None if source in UNNAMED_AGENTS else "support_agent"
    assert (traj.agent, traj.input, traj.output_ok, traj.content) == (agent, scenario.user, True, True)
    assert [(s.tool, s.args, s.result, s.agent) for s in traj.steps] == [
        (c.tool, c.args, c.result, agent) for c in script
    ]
    assert all(s.call_id for s in traj.steps)


def handoff_capture(framework: str, mode: str | None = None) -> Callable[[Scenario], Trajectory]:
    def read(s: Scenario) -> Trajectory:
        path = otlp_file(framework, "handoff", mode)
        return _one(read_otlp(path.read_bytes(), str(path)))

    return read


HANDOFF_TOOLS = {"transfer_to_support_agent", "transfer_to_agent", "handoff", "support_agent"}
HANDOFFS: dict[str, Callable[[Scenario], Trajectory]] = {
    "openai-agents+genai-semconv": lambda s: _one(read_otlp(openai_agents.spans_for(s, multi_agent=True), s.name)),
    **{
        f"pydantic-ai-v{v}": (
            lambda s, v=v: _one(read_otlp(pydantic_ai_agent.spans_for(s, version=v, multi_agent=True), s.name))
        )
        for v in pydantic_ai_agent.VERSIONS
    },
    "pydantic-ai-v1": handoff_capture("pydantic-ai", "v1"),
    **{f"google-adk-{m}": handoff_capture("google-adk", m) for m in ("v1", "v2", "v2-experimental")},
    "llama-index+openinference": handoff_capture("llama-index"),
    "smolagents+openinference": lambda s: _one(read_otlp(smolagents_agent.spans_for(s, multi_agent=True), s.name)),
    "autogen-core": handoff_capture("autogen"),
    "autogen-core-runtime": handoff_capture("autogen", "split"),  # a Swarm over 20 linked traces
    "vercel-ai-sdk": handoff_capture("vercel-ai"),
    **{f"strands-{m}": handoff_capture("strands", m) for m in ("default", "latest")},
}
"""Multi-agent runs: a triage agent hands the ``forbidden`` scenario to the support agent (a handoff
in the Agents SDK, agent delegation through a tool in pydantic-ai, ``sub_agents`` in Google ADK,
``AgentWorkflow`` with ``can_handoff_to`` in LlamaIndex, a managed agent in smolagents). Each records
it as a tool call (``transfer_to_support_agent``; ADK's ``transfer_to_agent(agent_name=...)``,
LlamaIndex's ``handoff``, smolagents' call of the managed agent by its name; Strands' agents-as-tools
pattern with a ``transfer_to_support_agent`` tool, and likewise in the Vercel AI SDK),
a tool outside the spec's vocabulary. Where the agents are recorded the call names the agent whose steps
follow, so it is read as a hand-off, not an unknown tool, and the verdict is the single agent's; where
they are not, ``unknown_tool`` warning about it is the only difference."""


@pytest.mark.parametrize("source", HANDOFFS)
def test_multi_agent_handoff_same_verdict(source):
    scenario = next(s for s in SCENARIOS if s.name == "forbidden")
    traj = HANDOFFS[source](scenario)
    triage, support = (None, None) if source in UNNAMED_AGENTS else ("triage_agent", "support_agent")
    assert traj.agent == triage
    handoff = traj.steps[0].tool
    assert handoff in HANDOFF_TOOLS
    assert [(s.tool, s.agent) for s in traj.steps] == [
        (handoff, triage),
        ("lookup_order", support),
        ("delete_account", support),
    ]
    g = grade(traj, SPEC)
    found = {(v.check, v.tool) for v in g.violations}
    # A clean multi-agent run read as bad only through its hand-off was the miss: named agents tell it apart.
    assert found == scenario.expected | ({("unknown_tool", handoff)} if triage is None else set())


def test_langchainjs_agent_as_tool_handoff_same_verdict_agents_not_told_apart():
    # LangGraph.js under OpenInference: the support graph runs inside the triage graph's tool. Its
    # spans inherit the tool node's LangGraph metadata (langgraph_node "tools"), so nothing tells the
    # nested graph from a node: its steps are the enclosing agent's (docs/instrumentations.md).
    scenario = next(s for s in SCENARIOS if s.name == "forbidden")
    traj = handoff_capture("langchainjs")(scenario)
    assert [(s.tool, s.agent) for s in traj.steps] == [
        ("transfer_to_support_agent", "triage_agent"),
        ("lookup_order", "triage_agent"),
        ("delete_account", "triage_agent"),
    ]
    found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
    assert found == scenario.expected | {("unknown_tool", "transfer_to_support_agent")}


@pytest.mark.parametrize("scenario", SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,), ids=lambda s: s.name)
@pytest.mark.parametrize("source", TOOL_CLASS_NAMES)
def test_tool_class_names_resolve_to_the_tools_called(source, scenario):
    # Every step was graded as "DynamicStructuredTool". With content on each step has the tool's name and
    # the model's call id (a tool that threw has no ToolMessage: the request names it).
    traj = TOOL_CLASS_NAMES[source](scenario)
    assert [(s.tool, s.call_id, s.failed) for s in traj.steps] == [
        (c.tool, f"call_{i}_{n}", c.error is not None)
        for i, turn in enumerate(scenario.turns)
        for n, c in enumerate(turn)
    ]
    if scenario is FAILING_LOOP:
        assert {(v.check, v.tool) for v in grade(traj, SPEC).violations} == FAILING_LOOP.expected


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_tool_class_names_stay_without_content(scenario):
    # Content off leaves LangChain's own class only (a tool made by tool()): every step is kept, none is named
    # (unknown_tool warns).
    traj = TOOL_CLASS_NAMES["langchainjs+traceloop-node"](scenario, content=False)
    assert traj.content is False
    assert [s.tool for s in traj.steps] == ["DynamicStructuredTool"] * len(scenario.calls)
    assert ("unknown_tool", "DynamicStructuredTool") in {(v.check, v.tool) for v in grade(traj, SPEC).violations}


@pytest.mark.parametrize("scenario", SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,), ids=lambda s: s.name)
def test_application_tool_classes_are_graded_as_the_tools_they_name_without_content(scenario):
    # Tools written as classes (`class LookupOrderTool extends StructuredTool`) leave their class on the span,
    # and with content off nothing else: every step was unknown_tool, lookup_order "missing", the forbidden
    # delete_account unseen. Each class names one tool of the spec, so the verdict is the scenario's but what
    # needs content (taint, before's same order, the user's confirmation), skipped and listed instead.
    traj = TOOL_CLASS_NAMES["langchainjs+traceloop-node-class-tools"](scenario, content=False)
    assert traj.content is False
    assert [s.tool for s in traj.steps] == [CLASS_TOOLS[c.tool] for c in scenario.calls]
    assert traj.tool_classes == tuple(dict.fromkeys(CLASS_TOOLS[c.tool] for c in scenario.calls))
    g = grade(traj, SPEC)
    needs_content = {"taint": "taint", "before": "before:same", "confirm": "confirm"}
    assert {(v.check, v.tool) for v in g.violations} == {p for p in scenario.expected if p[0] not in needs_content}
    for check, _ in scenario.expected:
        assert check not in needs_content or any(s.startswith(f"{needs_content[check]} (") for s in g.skipped)


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", TASK_SOURCES)
def test_task_sources_name_the_agent_and_the_request(source, scenario, content):
    # Taint and ungrounded were skipped on every CrewAI run under OpenInference: no user input was read.
    traj = TASK_SOURCES[source](scenario, content=content)
    assert (traj.agent, traj.input, traj.content) == ("Support Agent", scenario.user if content else "", content)
    assert [s.tool for s in traj.steps] == [c.tool for c in scenario.calls]
    g = grade(traj, SPEC)
    assert {(v.check, v.tool) for v in g.violations} == {p for p in scenario.expected if content or p[0] != "taint"}
    assert any(s.startswith("taint (") for s in g.skipped) is (not content)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", FRAMEWORK_ROOT)
def test_framework_root_sources_name_agent_input_calls_and_turns(source, scenario):
    # Mastra's runs had no user input (taint and ungrounded skipped) and the first call had no model turn.
    traj = FRAMEWORK_ROOT[source](scenario)
    assert (traj.agent, traj.input, traj.content) == ("support_agent", scenario.user, True)
    # Mastra re-serialises a result that is JSON text (compact separators): compared as values.
    assert [(s.tool, s.args, _value(s.result), s.call_id) for s in traj.steps] == [
        (c.tool, c.args, _value(c.result), f"call_{i}_{n}")
        for i, turn in enumerate(scenario.turns)
        for n, c in enumerate(turn)
    ]
    assert traj.model_turns == tuple(i for i, turn in enumerate(scenario.turns) for _ in turn)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("source", FRAMEWORK_ROOT)
def test_framework_root_sources_without_content_skip_taint_rather_than_pass_it(source, scenario):
    # Content off (Mastra's hideInput / hideOutput) hides the requested calls too: each call's model turn
    # comes from the model_step span it runs in (the first call had none, the others the previous step's).
    traj = FRAMEWORK_ROOT[source](scenario, content=False)
    assert (traj.agent, traj.input, traj.content, traj.messages) == ("support_agent", "", False, ())
    assert [(s.tool, s.args, s.result, s.call_id) for s in traj.steps] == [
        (c.tool, {}, None, f"call_{i}_{n}") for i, turn in enumerate(scenario.turns) for n, c in enumerate(turn)
    ]
    assert traj.model_turns == tuple(i for i, turn in enumerate(scenario.turns) for _ in turn)
    g = grade(traj, SPEC)
    assert {(v.check, v.tool) for v in g.violations} == {p for p in scenario.expected if p[0] != "taint"}
    assert any(s.startswith("taint (") for s in g.skipped)


def _value(text):
    import json

    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_llama_index_workflow_of_three_agents_same_verdict(scenario, content):
    # An AgentWorkflow of three agents passing the request on twice (triage_agent -> support_agent, which
    # looks the order up -> billing_agent, which runs the rest): every step in order, each hand-off a call
    # of LlamaIndex's handoff tool; the single agent's verdicts, taint caught across agents (the page
    # fetched by one, the email sent by another), and warnings about the hand-off tool only (its name).
    # With content on each step is its agent's (the workflow step running each model call names it; with
    # content off nothing does).
    traj = otlp_capture("llama-index", "team")(scenario, content=content)
    first, *rest = scenario.calls
    assert [s.tool for s in traj.steps] == ["handoff", first.tool, "handoff", *(c.tool for c in rest)]
    agents = ["triage_agent", "support_agent", "support_agent"] + ["billing_agent"] * len(rest)
    assert (traj.agent, [s.agent for s in traj.steps]) == (
        ("triage_agent", agents) if content else (None, [None] * len(agents))
    )
    if content:
        assert traj.input == scenario.user
        assert [s.args for s in traj.steps] == [
            {"to_agent": "support_agent", "reason": "an order request"},
            first.args,
            {"to_agent": "billing_agent", "reason": "the order is looked up"},
            *(c.args for c in rest),
        ]
    g = grade(traj, SPEC)
    found = {(v.check, v.tool) for v in g.violations}
    assert {p for p in found if p[1] != "handoff"} == {p for p in scenario.expected if content or p[0] != "taint"}
    # The hand-off's target names an agent of the run: not ungrounded (the workflow lists its agents to the
    # model in the handoff tool's description, which no source holds), and, with the agents recorded, a
    # hand-off rather than an unknown tool. With content off no step names its agent: the tool warns.
    handoff = {v.check for v in g.violations if v.tool == "handoff"}
    assert handoff == (set() if content else {"unknown_tool"})
    assert any(s.startswith("taint (") for s in g.skipped) is (not content)


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("scenario", SCENARIOS + POLICY_SCENARIOS + (FAILING_LOOP,), ids=lambda s: s.name)
@pytest.mark.parametrize("source", MODEL_CLIENT_CONTENT)
def test_autogen_with_content_is_one_step_per_call(source, scenario, content):
    # Under OpenInference every call was two steps (its TOOL span and autogen-core's execute_tool span inside
    # it), so a clean run read as `before` and a failing loop as repeats; and with content on, taint and the
    # repeat of a failing tool were missed. The two spans of one call are one step, its call id from either.
    traj = MODEL_CLIENT_CONTENT[source](scenario, content=content)
    assert (traj.agent, traj.content) == ("support_agent", content)
    assert [(s.tool, s.call_id, s.agent, s.failed) for s in traj.steps] == [
        (c.tool, f"call_{i}_{n}", "support_agent", c.error is not None)
        for i, turn in enumerate(scenario.turns)
        if not isinstance(turn, Ask)
        for n, c in enumerate(turn)
    ]
    if content:
        replies = tuple(t.reply for t in scenario.turns if isinstance(t, Ask))
        assert traj.input == ((scenario.user, *replies) if replies else scenario.user)
        assert [(s.args, s.result) for s in traj.steps][:1] == [(scenario.calls[0].args, _result(scenario.calls[0]))]
    found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
    blind = set() if content else {"taint", "confirm", "before"}
    assert found == {p for p in scenario.expected if p[0] not in blind}


def _result(call):
    return call.result if call.error is None else call.error


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_hand_off_to_an_agent_that_only_answers_is_a_hand_off(scenario, content):
    # A clean two-agent run read as bad: support_agent makes every call, then hands the run to reply_agent,
    # which only writes the answer. With no later step by reply_agent the hand-off was `unknown_tool` and its
    # to_agent `ungrounded`. The agent ran (its spans are recorded): a call naming it hands the run to it.
    traj = otlp_capture("llama-index", "reply")(scenario, content=content)
    assert [s.tool for s in traj.steps] == [c.tool for c in scenario.calls] + ["handoff"]
    found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
    if content:
        assert traj.agents == ("support_agent", "reply_agent")
        assert found == scenario.expected
    else:  # no agent is named with content off: nothing tells the hand-off from any other tool
        assert traj.agents == ()
        assert found == {p for p in scenario.expected if p[0] != "taint"} | {("unknown_tool", "handoff")}


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_crew_delegating_to_a_coworker_that_only_answers(scenario, content):
    # A clean CrewAI run with delegation read as bad: Support Agent's call of CrewAI's own "Delegate work to
    # coworker" tool was unknown_tool. The coworker runs inside that tool with no AGENT span of its own; the
    # crew's kickoff span lists it (crew_agents), and the call names it (coworker=...): a hand-off.
    traj = otlp_capture("crewai-openinference", "delegation")(scenario, content=content)
    assert traj.agents == ("Support Agent", "Reply Agent")
    assert [s.tool for s in traj.steps] == [c.tool for c in scenario.calls] + ["Delegate work to coworker"]
    found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
    if content:
        assert found == scenario.expected
    else:  # the coworker's name is an argument, hidden with content off
        assert found == {p for p in scenario.expected if p[0] != "taint"} | {
            ("unknown_tool", "Delegate work to coworker")
        }


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("source", MODEL_CLIENT_CONTENT)
def test_autogen_tools_answering_with_error_objects_fail(source, content):
    # The failing loop again, each failure returned as {"error": "RuntimeError: ..."} instead of raised, so
    # AutoGen and its spans see successes. With content the result is nothing but an error object: a failed
    # call, a failing loop (not a repeat); without content nothing says so.
    path = otlp_file("autogen", "error_objects", source.split("+")[1], content)
    traj = _one(read_otlp(path.read_bytes(), str(path)))
    assert [s.tool for s in traj.steps] == [c.tool for c in FAILING_LOOP.calls]
    assert [s.failed for s in traj.steps] == [content and c.error is not None for c in FAILING_LOOP.calls]
    found = {(v.check, v.tool) for v in grade(traj, SPEC).violations}
    assert found == (FAILING_LOOP.expected if content else set())


NEW_CAPTURES = sorted(
    p
    for pattern in (
        "autogen/*.openinference*.otlp",
        "autogen/*.openai-v2*.otlp",
        "autogen/*.traceloop*.otlp",
        "llama-index/*.reply*.otlp",
        "crewai-openinference/*.delegation*.otlp",
        "vercel-ai-traceloop/*.otlp",
        "semantic-kernel/*.logs.semantic-kernel.traces.otlp",
    )
    for p in TESTDATA.glob(pattern)
)


def test_a_batch_of_these_captures_with_a_non_agent_trace_is_graded_and_the_trace_skipped(capsys):
    # Every capture of these frameworks in one `luckrate grade`, beside the MCP SDK's one-span
    # notifications/initialized trace: the runs are graded, that trace is skipped and counted, not refused.
    import json

    from luckrate.cli import main

    notification = str(TESTDATA / "mcp" / "initialized.sdk.mcp.otlp")
    files = [str(p) for p in NEW_CAPTURES]
    code = main(
        ["grade", "--spec", str(ROOT / "examples" / "spec.py"), "--format", "otlp", "--json", *files, notification]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1  # the gate fails on the hard findings of the bad scenarios
    assert len(report["runs"]) == len(files)
    assert report["skipped"]["traces"] == 1 and report["skipped"]["files"] == {notification: 1}


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in NEW_CAPTURES
        if p.name.startswith(("clean.", "user_supplied."))
        and ".nocontent." not in p.name
        and "semantic-kernel" not in p.parts
    ],
    ids=lambda p: p.name,
)
def test_no_clean_run_of_these_captures_is_bad(path):
    # With content, `composed` and `ungrounded` included: a value the model composed or took from nowhere
    # would show here (content off is graded in the tests above, hand-offs warning where no agent is named).
    g = grade(_one(read_otlp(path.read_bytes(), str(path))), SPEC)
    assert g.path_ok and not g.violations, g.violations


@pytest.mark.parametrize("content", [True, False], ids=["content", "nocontent"])
@pytest.mark.parametrize("source", MODEL_CLIENT_CONTENT)
def test_autogen_with_content_reports_an_invented_value(source, content):
    # An order id nothing in the run holds (the user named none): with content it is `ungrounded`, as on every
    # source that records the arguments; without, grounding is reported skipped.
    path = otlp_file("autogen", "invented", source.split("+")[1], content)
    traj = _one(read_otlp(path.read_bytes(), str(path)))
    assert [(s.tool, s.args if content else {}) for s in traj.steps] == [
        ("issue_refund", {"order_id": "ORD-99999", "amount": 129} if content else {})
    ]
    g = grade(traj, SPEC)
    assert (("ungrounded", "issue_refund") in {(v.check, v.tool) for v in g.violations}) is content
    assert any(s.startswith("ungrounded (") for s in g.skipped) is (not content)
