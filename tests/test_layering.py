"""Data flows one way: core imports only the standard library (and itself); adapters never import service."""

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "luckrate"


def imported_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _files(package: str):
    return sorted((SRC / package).rglob("*.py"))


@pytest.mark.parametrize("path", _files("core"), ids=lambda p: str(p.relative_to(SRC)))
def test_core_is_stdlib_only(path):
    for module in imported_modules(path):
        top = module.split(".")[0]
        assert top in sys.stdlib_module_names or module.startswith("luckrate.core"), f"{path.name} imports {module}"


@pytest.mark.parametrize("path", _files("adapters"), ids=lambda p: str(p.relative_to(SRC)))
def test_adapters_do_not_import_the_service_or_frameworks(path):
    for module in imported_modules(path):
        assert not module.startswith("luckrate.service"), f"{path.name} imports {module}"
        assert module.split(".")[0] not in {"langchain_core", "langgraph", "crewai", "agents"}, f"{path.name} imports {module}"



def test_convention_modules_form_no_cycle():
    # roles.py once imported the convention modules (lazily) that import it; the registry in
    # conventions.py is now the one place that knows them all.
    from luckrate.adapters.otlp.conventions import CONVENTIONS

    otlp = SRC / "adapters" / "otlp"
    roles = set(imported_modules(otlp / "roles.py"))
    assert not {m for m in roles if m.startswith("luckrate.adapters.otlp.") and m.rsplit(".", 1)[1] in
                {"conventions", "genai", "openinference", "traceloop"}}
    for convention in CONVENTIONS:
        module = convention.classify.__module__
        assert "luckrate.adapters.otlp.conventions" not in set(imported_modules(otlp / f"{module.rsplit('.', 1)[1]}.py"))
