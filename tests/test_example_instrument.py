"""The instrumentation example (examples/instrument.py) and the README's "instrument your agent" snippet, each
run as written against a real ``luckrate serve``: its run arrives over the SDK's OTLP exporter and is graded,
output passing, path clean. A new user had no snippet to follow and guessed."""

import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.service.harness import Server, sdk_env, snippet, total

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "instrument.py"


@pytest.mark.parametrize("how", ["argument", "OTEL_EXPORTER_OTLP_ENDPOINT"])
def test_the_instrumentation_example_is_graded_as_a_clean_passing_run(how):
    with Server("--root-grace", "0.2") as server:
        if how == "argument":
            subprocess.run([sys.executable, str(EXAMPLE), server.grpc], check=True, timeout=60)
        else:
            subprocess.run([sys.executable, str(EXAMPLE)], check=True, timeout=60, env=sdk_env(f"http://{server.grpc}"))
        s = server.wait_metric("luckrate_runs_total", 1, output="pass", path="ok")
        assert total(s, "luckrate_runs_total") == 1
        assert total(s, "luckrate_spans_assembled_total") == 3


def test_the_readme_snippet_is_graded_as_a_clean_passing_run(tmp_path):
    code = snippet("README.md")
    assert "OTLPSpanExporter()" in code  # where to send: the standard variables, as the test sets them
    assert len(code.splitlines()) <= 30
    with Server("--root-grace", "0.2") as server:
        script = tmp_path / "agent.py"
        script.write_text(code, encoding="utf-8")
        subprocess.run([sys.executable, str(script)], check=True, timeout=60, env=sdk_env(f"http://{server.grpc}"))
        s = server.wait_metric("luckrate_runs_total", 1, output="pass", path="ok")
        assert total(s, "luckrate_runs_total") == 1
        assert total(s, "luckrate_spans_assembled_total") == 3
        with urllib.request.urlopen(f"http://127.0.0.1:{server.ports['prometheus']}/metrics", timeout=10) as r:
            exposed = r.read().decode().splitlines()
    # The line the README quotes is the one /metrics exposes.
    quoted = re.search(r"`(luckrate_runs_total\{.*?\} 1)`", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert quoted and quoted.group(1) in exposed


def test_the_quick_start_shows_the_readme_snippet_and_both_name_the_example():
    assert snippet("docs/quick-start.md") == snippet("README.md")
    for page in ("README.md", "docs/quick-start.md"):
        assert "examples/instrument.py" in (ROOT / page).read_text(encoding="utf-8")
