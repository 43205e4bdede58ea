"""No test module imports another test module (nor a conftest): what tests share lives in tests/builders.py,
a fixture in a conftest, or a helper module such as tests/service/harness.py. A test module imported by
another runs its module-level code twice under two names, hides which tests a change reaches, and keeps a
helper where readers do not look for it.

The import reader sees ``import a.b``, ``from a.b import c`` (which may import the module ``a.b.c``),
relative imports resolved against the file's package, and ``importlib.import_module``/``__import__`` with a
literal name, at any depth in the file. The rule is tested against planted imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def imports(path: Path, root: Path = TESTS) -> Iterator[tuple[int, str]]:
    """(line, dotted module) for every module ``path`` may import; ``root`` is the ``tests`` package."""
    package = [root.name, *path.relative_to(root).parent.parts]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield node.lineno, module
            yield from ((node.lineno, f"{module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in {"import_module", "__import__"} and isinstance(node.args[0].value, str):
                yield node.lineno, node.args[0].value


def imported_test_modules(path: Path, root: Path = TESTS) -> list[str]:
    """``file:line: module`` for each test module or conftest that ``path`` imports."""
    found = []
    for line, module in imports(path, root):
        parts = module.split(".")
        hit = next((i for i, p in enumerate(parts) if i and (p.startswith("test_") or p == "conftest")), None)
        if parts[0] == root.name and hit is not None:
            found.append(f"{path.relative_to(root.parent)}:{line}: {'.'.join(parts[: hit + 1])}")
    return sorted(set(found))


def test_no_test_module_imports_another():
    found = [v for path in sorted(TESTS.rglob("*.py")) for v in imported_test_modules(path)]
    assert found == [], "move what they share to tests/builders.py, a conftest fixture or a helper module"


PLANTED = [
    # (file under tests/, source, the module the rule must name)
    ("service/x.py", "from tests.service.test_e2e import runs\n", "tests.service.test_e2e"),
    ("service/x.py", "from tests.service import test_e2e\n", "tests.service.test_e2e"),
    ("service/x.py", "from .test_e2e import runs\n", "tests.service.test_e2e"),
    ("service/x.py", "from ..adapters.test_otlp_runs import Recorder\n", "tests.adapters.test_otlp_runs"),
    ("x.py", "import tests.adapters.test_otlp_runs as r\n", "tests.adapters.test_otlp_runs"),
    ("x.py", "def f():\n    from tests.test_cli import main\n", "tests.test_cli"),
    ("x.py", "import importlib\nimportlib.import_module('tests.service.test_e2e')\n", "tests.service.test_e2e"),
    ("service/x.py", "from tests.service.conftest import spans\n", "tests.service.conftest"),
]


@pytest.mark.parametrize("file,source,module", PLANTED, ids=[p[1].strip().splitlines()[-1].strip() for p in PLANTED])
def test_a_planted_import_of_a_test_module_is_caught(tmp_path, file, source, module):
    root = tmp_path / "tests"
    planted = root / file
    planted.parent.mkdir(parents=True)
    planted.write_text(source)
    assert [v.rsplit(": ", 1)[1] for v in imported_test_modules(planted, root)] == [module]


def test_shared_helpers_are_not_flagged(tmp_path):
    root = tmp_path / "tests"
    planted = root / "service" / "test_x.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(
        "from tests.builders import span\nfrom tests.service.harness import Server\nfrom . import harness\n"
        "from luckrate.service import app\nimport pytest\n"
    )
    assert imported_test_modules(planted, root) == []
