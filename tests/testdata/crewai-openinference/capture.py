"""Capture CrewAI crews' spans under openinference-instrumentation-crewai, from real crew runs on the
scripted fake LLM of ../crewai/capture.py (no network). See README.md here. Each output file is one
serialized ExportTraceServiceRequest; content off is OpenInference's TraceConfig hiding inputs,
outputs and messages.
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

from tests.scenarios import POLICY_SCENARIOS, SCENARIOS, Ask  # noqa: E402


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
            # A crew task takes no second user message: the policy scenario with a reply cannot run.
            policy = tuple(s for s in POLICY_SCENARIOS if not any(isinstance(t, Ask) for t in s.turns))
            for scenario in SCENARIOS + policy:
                exporter.clear()
                script = crewai_capture.Script(scenario)
                llm = crewai_capture.ScriptedLLM(model="scripted-model", scenario=scenario)
                agent = Agent(
                    role=crewai_capture.ROLE,
                    goal="Help the customer.",
                    backstory="Support desk.",
                    llm=llm,
                    tools=[crewai_capture.scripted_tool(n, script) for n in crewai_capture.SCHEMAS],
                    verbose=False,
                    max_iter=10,
                )
                task = Task(description=scenario.user, expected_output="An answer for the customer.", agent=agent)
                with provider.get_tracer("luckrate.capture").start_as_current_span(
                    f"eval {scenario.name}", attributes={"luckrate.output_ok": True}
                ):
                    Crew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False).kickoff()
                spans = exporter.get_finished_spans()
                stem = f"{scenario.name}{'' if content else '.nocontent'}.crewai-openinference"
                (HERE / f"{stem}.otlp").write_bytes(encode_spans(spans).SerializeToString())
                print(f"{stem}.otlp: {len(spans)} spans")
        finally:
            instrumentor.uninstrument()


if __name__ == "__main__":
    main()
