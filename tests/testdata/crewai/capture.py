"""Capture CrewAI tool-usage events from real crew runs on a scripted fake LLM (no network).

crewai cannot live in luckrate's test venv (it pins ``openai<3`` while ``openai-agents`` needs
``openai>=3``, and it downgrades pydantic), so this script runs in a scratch venv and the captures are
committed; see README.md here for how to regenerate. The tests read the committed JSONL files.

Each output file ``<run>.json`` is the run envelope read by ``luckrate.adapters.crewai``:
``{"id", "case", "output_ok", "events": [...]}`` where each event is ``event.model_dump(mode="json")``
of a ToolUsageStartedEvent / ToolUsageFinishedEvent / ToolUsageErrorEvent the crew's event bus
emitted, in emission order, minus the object-valued fields (``agent``, ``from_agent``, ``from_task``,
``tool_class``) that do not serialise, and with an error event's exception as its text.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

# Offline: no telemetry, no trace upload, no first-run prompts.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_DISABLE_TRACKING", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.events import crewai_event_bus  # noqa: E402
from crewai.events.types.tool_usage_events import (  # noqa: E402
    ToolUsageErrorEvent,
    ToolUsageFinishedEvent,
    ToolUsageStartedEvent,
)
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

from tests.scenarios import ORDER, PAGE, POLICY_SCENARIOS, SCENARIOS, Ask, Call, Scenario  # noqa: E402

OUT = Path(__file__).resolve().parent
EVENTS = (ToolUsageStartedEvent, ToolUsageFinishedEvent, ToolUsageErrorEvent)
UNSERIALISABLE = {"agent", "from_agent", "from_task", "tool_class"}
ROLE = "Support Agent"


class ScriptedLLM(BaseLLM):
    """Returns the scenario's turns as OpenAI-style native tool calls, then its answer. The turn is
    the number of assistant tool-call messages already in the conversation (no state kept)."""

    scenario: Any = None

    def call(
        self,
        messages,
        tools=None,
        callbacks=None,
        available_functions=None,
        from_task=None,
        from_agent=None,
        response_model=None,
    ) -> str | list[dict[str, Any]]:
        history = messages if isinstance(messages, list) else []
        turn = sum(1 for m in history if m.get("role") == "assistant" and m.get("tool_calls"))
        turns = self.scenario.turns
        if turn >= len(turns):
            return self.scenario.answer
        return [
            {
                "id": f"call_{turn}_{n}",
                "type": "function",
                "function": {"name": c.tool, "arguments": json.dumps(c.args)},
            }
            for n, c in enumerate(turns[turn])
        ]

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 128_000


class Script:
    """Unanswered scripted calls, claimed by tool name and arguments (parallel calls run on threads)."""

    def __init__(self, scenario: Scenario):
        self.pending = scenario.calls
        self.lock = threading.Lock()

    def answer(self, tool: str, args: dict[str, Any]) -> str:
        with self.lock:
            call = next((c for c in self.pending if c.tool == tool and c.args == args), None)
            if call is None:
                raise AssertionError(f"unscripted call {tool}({args!r})")
            self.pending.remove(call)
        if call.error is not None:
            raise RuntimeError(call.error)
        return call.result or ""


class OrderArgs(BaseModel):
    order_id: str = Field(description="order id")


class RefundArgs(BaseModel):
    order_id: str = Field(description="order id")
    amount: int = Field(description="amount")


class UrlArgs(BaseModel):
    url: str = Field(description="url")


class EmailArgs(BaseModel):
    to: str = Field(description="recipient")
    body: str = Field(description="body")


class UserArgs(BaseModel):
    user_id: str = Field(description="user id")


class ReasonArgs(BaseModel):
    reason: str = Field(description="why")


SCHEMAS = {
    "lookup_order": OrderArgs,
    "issue_refund": RefundArgs,
    "fetch_webpage": UrlArgs,
    "send_email": EmailArgs,
    "delete_account": UserArgs,
    "escalate_to_human": ReasonArgs,
    "cancel_order": OrderArgs,
}


def scripted_tool(name: str, script: Script) -> BaseTool:
    class ScriptedTool(BaseTool):
        def _run(self, **kwargs: Any) -> str:
            return script.answer(self.name, kwargs)

    return ScriptedTool(name=name, description=f"The {name} tool.", args_schema=SCHEMAS[name])


def _dump(event: Any) -> dict[str, Any]:
    """The event as JSON. ``error`` holds the exception object, which pydantic cannot serialise: we
    keep its text, as a listener that ships events elsewhere must."""
    data = event.model_dump(mode="json", exclude=UNSERIALISABLE | {"error"})
    if isinstance(event, ToolUsageErrorEvent):
        data["error"] = str(event.error)
    return data


def run(members: list[tuple[str, Scenario]]) -> list[dict[str, Any]]:
    """Run a sequential crew, one agent and task per (role, scenario), each agent on its own scripted
    LLM and tools; return the tool-usage events in emission order."""
    agents, tasks = [], []
    for role, scenario in members:
        script = Script(scenario)
        llm = ScriptedLLM(model="scripted-model", scenario=scenario)
        agent = Agent(
            role=role,
            goal="Help the customer.",
            backstory="Support desk.",
            llm=llm,
            tools=[scripted_tool(name, script) for name in SCHEMAS],
            verbose=False,
            max_iter=10,
        )
        agents.append(agent)
        tasks.append(Task(description=scenario.user, expected_output="An answer for the customer.", agent=agent))
    events: list[dict[str, Any]] = []
    lock = threading.Lock()
    with crewai_event_bus.scoped_handlers():
        for kind in EVENTS:

            @crewai_event_bus.on(kind)
            def _record(source: Any, event: Any) -> None:
                with lock:
                    events.append(_dump(event))

        Crew(agents=agents, tasks=tasks, process=Process.sequential, verbose=False).kickoff()
        crewai_event_bus.flush()
    return sorted(events, key=lambda e: e.get("emission_sequence") or 0)


def extra_runs() -> dict[str, list[tuple[str, Scenario]]]:
    """Beyond tests/scenarios.py: a failing tool with two calls in one turn, and a two-agent crew
    (a researcher reads the page, then the support agent sends the email)."""
    failing = Scenario(
        "failing_parallel",
        "Look up orders ORD-1 and ORD-2.",
        (
            (
                Call("lookup_order", {"order_id": "ORD-1"}, '{"order_id": "ORD-1"}'),
                Call("lookup_order", {"order_id": "ORD-2"}, error="order service unavailable"),
            ),
        ),
        "ORD-1 found; ORD-2 could not be looked up.",
    )
    research = Scenario(
        "research",
        "Find the refund policy for order ORD-12345.",
        (
            (Call("lookup_order", {"order_id": "ORD-12345"}, ORDER),),
            (Call("fetch_webpage", {"url": "https://shop.example/faq"}, PAGE),),
        ),
        "Refunds take 5 business days.",
    )
    reply = Scenario(
        "reply",
        "Email the policy to alice@example.com.",
        ((Call("send_email", {"to": "alice@example.com", "body": "Refunds take 5 business days."}, "sent"),),),
        "Emailed.",
    )
    return {"failing_parallel": [(ROLE, failing)], "two_agents": [("Researcher", research), (ROLE, reply)]}


def main() -> None:
    # A crew task takes no second user message, so a scenario with an Ask turn (a confirmation in a
    # second user turn) cannot run here; the others can.
    policy = [s for s in POLICY_SCENARIOS if not any(isinstance(t, Ask) for t in s.turns)]
    runs = {s.name: [(ROLE, s)] for s in SCENARIOS + tuple(policy)} | extra_runs()
    for name, members in runs.items():
        events = run(members)
        # The envelope adds what an eval harness knows and the events do not: run id, case, verdict.
        run_file = {"id": f"crewai-{name}", "case": name, "output_ok": True, "events": events}
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(run_file, indent=1, sort_keys=True) + "\n")
        print(f"{path.name}: {len(events)} events")


if __name__ == "__main__":
    main()
