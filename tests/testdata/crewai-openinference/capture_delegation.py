"""Capture CrewAI crews of two agents with delegation under openinference-instrumentation-crewai, on the
scripted LLM of ../crewai/capture.py (no network). See README.md here.

``Support Agent`` (``allow_delegation=True``) makes the scenario's calls, then calls CrewAI's own delegation
tool (``Delegate work to coworker``, called by the model as ``delegate_work_to_coworker``) naming ``Reply
Agent``, which runs inside that tool, makes no call and writes the answer. Content off is OpenInference's
TraceConfig hiding inputs, outputs and messages. Output: ``<name>.delegation[.nocontent].crewai-openinference.otlp``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

os.environ["OTEL_SDK_DISABLED"] = "false"  # ../crewai/capture.py turns CrewAI's own tracing off; ours stays on
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

_spec = importlib.util.spec_from_file_location("crewai_capture", HERE.parent / "crewai" / "capture.py")
crewai_capture = sys.modules["crewai_capture"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(crewai_capture)

from crewai import Agent, Crew, Process, Task  # noqa: E402
from openinference.instrumentation import TraceConfig  # noqa: E402
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.scenarios import SCENARIOS, Call, Scenario  # noqa: E402

REPLY = "Reply Agent"
DELEGATE = Call(
    "delegate_work_to_coworker",
    {"task": "Write the customer's reply.", "context": "The request is handled.", "coworker": REPLY},
)


def crew(scenario: Scenario) -> Crew:
    script = crewai_capture.Script(scenario)
    lead = Agent(
        role=crewai_capture.ROLE,
        goal="Help the customer.",
        backstory="Support desk.",
        llm=crewai_capture.ScriptedLLM(
            model="scripted-model",
            scenario=Scenario(scenario.name, scenario.user, (*scenario.turns, (DELEGATE,)), scenario.answer),
        ),
        tools=[crewai_capture.scripted_tool(n, script) for n in crewai_capture.SCHEMAS],
        allow_delegation=True,
        verbose=False,
        max_iter=10,
    )
    reply = Agent(
        role=REPLY,
        goal="Write replies to customers.",
        backstory="Writes.",
        llm=crewai_capture.ScriptedLLM(
            model="scripted-model", scenario=Scenario(scenario.name, scenario.user, (), scenario.answer)
        ),
        tools=[],
        verbose=False,
    )
    task = Task(description=scenario.user, expected_output="An answer for the customer.", agent=lead)
    return Crew(agents=[lead, reply], tasks=[task], process=Process.sequential, verbose=False)


def main() -> None:
    for content in (True, False):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        hide = not content
        instrumentor = CrewAIInstrumentor()
        instrumentor.instrument(
            tracer_provider=provider,
            config=TraceConfig(
                hide_inputs=hide, hide_outputs=hide, hide_input_messages=hide, hide_output_messages=hide
            ),
        )
        try:
            for scenario in SCENARIOS:
                exporter.clear()
                with provider.get_tracer("luckrate.capture").start_as_current_span(
                    f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
                ):
                    crew(scenario).kickoff()
                spans = exporter.get_finished_spans()
                stem = f"{scenario.name}.delegation{'' if content else '.nocontent'}.crewai-openinference"
                (HERE / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
                print(f"{stem}.otlp: {len(spans)} spans")
        finally:
            instrumentor.uninstrument()


if __name__ == "__main__":
    main()
