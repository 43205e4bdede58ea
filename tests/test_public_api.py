"""The public API is ``luckrate.__all__``: every name resolves, and the Python in the README and the docs imports
only from it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import luckrate

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("name", luckrate.__all__)
def test_every_public_name_resolves(name):
    assert getattr(luckrate, name).__name__ == name


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'grade_all'"):
        luckrate.grade_all  # noqa: B018


@pytest.mark.e2e  # a fresh interpreter as a subprocess
def test_import_luckrate_imports_nothing_else():
    code = "import sys, luckrate; print(sorted(m for m in sys.modules if m.startswith('luckrate.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_docs_python_imports_only_the_public_api():
    blocks = [block for page in PAGES for block in python_blocks(page.read_text(encoding="utf-8"))]
    assert any("from luckrate import" in block for block in blocks), "no ```python block imports luckrate"
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("luckrate"):
                assert node.module == "luckrate", f"the docs import from {node.module}"
                assert {a.name for a in node.names} <= set(luckrate.__all__)
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("luckrate.") for a in node.names)


def test_all_is_exactly_the_names_it_knows_where_to_find():
    assert sorted(luckrate.__all__) == sorted(luckrate._WHERE) == luckrate.__all__
