"""Every install line of docs/instrumentations.md ("Install an instrumentation"), run as written in a fresh
virtual environment, then its instrumentor's ``instrument()``: the page and this test read the same table,
so they cannot drift apart.

Regression: `pip install openai opentelemetry-instrumentation-openai-v2` failed at import (no `httpx`, then
no `opentelemetry.util.genai.instruments`), and the working pins were only in a test-data README. pip's
cache keeps the second run to seconds per line; the first downloads the packages from PyPI.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "instrumentations.md"
SECTION = "## Install an instrumentation"


def install_lines() -> list[tuple[str, list[str], str]]:
    """``(instrumentation, pip arguments, import line)`` for each row of the page's install table."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`pip install "):
            rows.append((cells[0].strip("`"), shlex.split(cells[1].strip("`"))[2:], cells[2].strip("`")))
    return rows


LINES = install_lines()


def test_the_page_has_the_lines_the_issue_asked_for():
    packages = {arg.split("==")[0] for _, args, _ in LINES for arg in args}
    assert {"opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai"} <= packages
    assert any(p.startswith("opentelemetry-instrumentation-genai-") for p in packages)
    for name, args, importing in LINES:
        assert all(re.fullmatch(r"[A-Za-z0-9_.-]+(==[A-Za-z0-9_.]+)?", a) for a in args), name
        assert re.fullmatch(r"from [\w.]+ import \w+Instrumentor", importing), name


@pytest.mark.parametrize("name, args, importing", LINES, ids=[row[0] for row in LINES])
def test_each_install_line_installs_and_instruments_in_a_fresh_venv(tmp_path, name, args, importing):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{name}: pip install {' '.join(args)}\n{done.stderr[-3000:]}"
    instrumentor = importing.rsplit(" ", 1)[1]
    code = (
        f"{importing}\n"
        f"i = {instrumentor}()\n"
        "i.instrument()\n"  # a missing or conflicting library makes this a logged no-op: checked next
        "assert i.is_instrumented_by_opentelemetry, 'instrument() did nothing: a dependency is missing'\n"
        "i.uninstrument()\n"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, f"{name}: {importing}\n{done.stderr[-3000:]}"
