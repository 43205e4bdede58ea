"""Write the OpenAI Agents SDK captures in this folder from live runs of tests/frameworks/openai_agents.py.

For each scenario of tests/scenarios.py:
- ``<name>.openai-agents.otlp``: the spans as one serialized OTLP ``ExportTraceServiceRequest``;
- ``<name>.openai-agents.otlp.json``: the same request as OTLP/JSON;
- ``<name>.openai-agents.nocontent.otlp``: a run with content capture off.
Plus ``failing.openai-agents.otlp`` (a raising tool, then two calls in one turn),
``handoff.openai-agents.otlp`` (the forbidden scenario behind a triage agent's handoff), and
``scenarios.openai-agents.otlp.jsonl`` (the four scenarios, one OTLP/JSON request per line).

Run from the repository root: ``.venv/bin/python tests/testdata/otlp/capture.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.builders import otlp_json  # noqa: E402
from tests.frameworks.openai_agents import FAILING, spans_for  # noqa: E402
from tests.scenarios import BY_NAME, SCENARIOS  # noqa: E402

OUT = Path(__file__).resolve().parent
SRC = "openai-agents"


def main() -> None:
    lines = []
    for scenario in SCENARIOS:
        request = spans_for(scenario)
        (OUT / f"{scenario.name}.{SRC}.otlp").write_bytes(request)
        (OUT / f"{scenario.name}.{SRC}.otlp.json").write_bytes(otlp_json(request, pretty=True) + b"\n")
        (OUT / f"{scenario.name}.{SRC}.nocontent.otlp").write_bytes(spans_for(scenario, capture=False))
        lines.append(otlp_json(request, pretty=True).decode().replace("\n", ""))
        print(f"{scenario.name}: content on (protobuf, JSON) and off")
    (OUT / f"scenarios.{SRC}.otlp.jsonl").write_text("\n".join(lines) + "\n")
    (OUT / f"failing.{SRC}.otlp").write_bytes(spans_for(FAILING))
    (OUT / f"handoff.{SRC}.otlp").write_bytes(spans_for(BY_NAME["forbidden"], multi_agent=True))
    print("failing, handoff, scenarios.jsonl")


if __name__ == "__main__":
    main()
