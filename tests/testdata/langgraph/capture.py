"""Write the LangGraph captures in this folder from live runs of tests/frameworks/langgraph_agent.py.

For each scenario of tests/scenarios.py (plus ``parallel_failing``):

- ``<name>.json``: the run's final message list as ``messages_to_dict`` writes it, in the envelope
  ``luckrate.adapters.langgraph`` reads: ``{"id", "case", "agent", "output_ok", "messages": [...]}``;
- ``<name>.openinference.otlp`` / ``<name>.traceloop.otlp``: the same agent's spans under
  openinference-instrumentation-langchain / opentelemetry-instrumentation-langchain, as one serialized
  OTLP ``ExportTraceServiceRequest`` (protobuf);
- ``<name>.openinference.otlp.json`` / ``<name>.traceloop.otlp.json``: the same request as OTLP/JSON.

Run from the repository root: ``.venv/bin/python tests/testdata/langgraph/capture.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import messages_to_dict  # noqa: E402

from tests.builders import otlp_json  # noqa: E402
from tests.frameworks.langgraph_agent import (  # noqa: E402
    AGENT_NAME,
    PARALLEL_FAILING,
    run_scenario,
    spans_for,
)
from tests.scenarios import SCENARIOS  # noqa: E402

OUT = Path(__file__).resolve().parent


def main() -> None:
    for scenario in (*SCENARIOS, PARALLEL_FAILING):
        run = {
            "id": f"langgraph-{scenario.name}",
            "case": scenario.name,
            "agent": AGENT_NAME,
            "output_ok": True,  # every scripted answer passes its output eval: the path decides luck
            "messages": messages_to_dict(run_scenario(scenario)),
        }
        (OUT / f"{scenario.name}.json").write_text(json.dumps(run, indent=1) + "\n")
        for kind in ("openinference", "traceloop"):
            request = spans_for(scenario, kind)
            (OUT / f"{scenario.name}.{kind}.otlp").write_bytes(request)
            (OUT / f"{scenario.name}.{kind}.otlp.json").write_bytes(otlp_json(request, pretty=True) + b"\n")
        print(f"{scenario.name}: messages, openinference and traceloop spans")


if __name__ == "__main__":
    main()
