"""Capture pydantic-ai's instrumentation data format version 1 (removed in pydantic-ai 2.0) from real
runs under pydantic-ai 1.x, with the same fixture the live tests use (tests/frameworks/pydantic_ai_agent.py).

Versions 2-6 run live in the tests; version 1 needs pydantic-ai 1.x, which cannot share the test
venv with 2.x, so it is captured once in a scratch venv and committed. See README.md here.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.frameworks import pydantic_ai_agent  # noqa: E402
from tests.scenarios import BY_NAME, SCENARIOS  # noqa: E402

OUT = Path(__file__).resolve().parent


def capture(name: str, **kwargs) -> None:
    data = pydantic_ai_agent.spans_for(**kwargs)
    path = OUT / f"{name}.pydantic-ai.otlp"
    path.write_bytes(data)
    print(f"{path.name}: {len(data)} bytes")


if __name__ == "__main__":
    assert 1 in pydantic_ai_agent.VERSIONS, "version 1 needs pydantic-ai 1.x (see README.md)"
    for s in SCENARIOS:
        capture(f"{s.name}.v1", scenario=s, version=1)
        capture(f"{s.name}.v1.nocontent", scenario=s, version=1, capture=False)
    capture("handoff.v1", scenario=BY_NAME["forbidden"], version=1, multi_agent=True)
