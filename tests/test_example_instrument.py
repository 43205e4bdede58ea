"""The README's instrumentation example (examples/instrument.py), run as written against a real
``luckrate serve``: its run arrives over the SDK's OTLP exporter and is graded, output passing, path clean.
A new user had no snippet to follow and guessed."""

import subprocess
import sys
from pathlib import Path

from tests.service.harness import Server, total

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "instrument.py"


def test_the_instrumentation_example_is_graded_as_a_clean_passing_run():
    with Server("--root-grace", "0.2") as server:
        subprocess.run([sys.executable, str(EXAMPLE), server.grpc], check=True, timeout=60)
        s = server.wait_metric("luckrate_runs_total", 1, output="pass", path="ok")
        assert total(s, "luckrate_runs_total") == 1
        assert total(s, "luckrate_spans_assembled_total") == 3


def test_the_readme_shows_the_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "examples/instrument.py" in readme
