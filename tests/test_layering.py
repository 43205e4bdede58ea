"""Data flows one way: core imports only the standard library (and itself); adapters never import service;
inside the service, each stage imports only itself and the stages after it (receive → assemble → grade →
export), never one before it, nor the wiring above them (``process/``, ``app``).

The import reader sees every form: ``import a.b``, ``from a.b import c`` (which may import the module
``a.b.c``: the code writes ``from luckrate.adapters.otlp import genai``), relative imports resolved against
the file's package, and ``importlib.import_module("a.b")`` / ``__import__("a.b")`` with a literal name.
The rules themselves are tested against a planted upward import in a throwaway package.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "luckrate"
FRAMEWORKS = {"langchain_core", "langgraph", "crewai", "agents"}


def _package_of(path: Path, root: Path) -> list[str]:
    """The dotted package ``path`` lives in, ``root`` being the directory of the top package."""
    return [root.name, *path.relative_to(root).parent.parts]


def _dynamic_name(node: ast.Call) -> str | None:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name in {"import_module", "__import__"} and node.args and isinstance(node.args[0], ast.Constant):
        value = node.args[0].value
        return value if isinstance(value, str) else None
    return None


def imported_modules(path: Path, root: Path = SRC) -> Iterator[str]:
    """Every module ``path`` may import, as dotted names; ``from m import n`` yields ``m`` and ``m.n``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            [module, *names] = _from_import(node, path, root)
            yield module
            yield from (f"{module}.{name}" for name in names)
        elif isinstance(node, ast.Call) and (name := _dynamic_name(node)):
            yield name


def core_violations(path: Path, root: Path = SRC) -> list[str]:
    core = f"{root.name}.core"
    return [
        m
        for m in imported_modules(path, root)
        if not (m.split(".")[0] in sys.stdlib_module_names or m == core or m.startswith(core + "."))
    ]


def adapter_violations(path: Path, root: Path = SRC) -> list[str]:
    service = f"{root.name}.service"
    return [
        m
        for m in imported_modules(path, root)
        if m == service or m.startswith(service + ".") or m.split(".")[0] in FRAMEWORKS
    ]


STAGES = ("receive", "assemble", "grade", "export")
"""The service's stages in the order data flows through them."""
SHARED = {"config", "settings", "security"}
"""Modules at the service's root that every stage may read (settings); the rest of the root (app, flags) and
``process/`` wire the stages together, so no stage imports them."""
ROOT_MODULES = {"__init__.py", "__main__.py", "app.py", "flags.py", *(f"{m}.py" for m in SHARED)}


def flow_violations(path: Path, root: Path = SRC) -> list[str]:
    """What a module in a service stage imports from an earlier stage, or from the wiring above the stages."""
    service = f"{root.name}.service"
    where = path.relative_to(root / "service").parts
    if len(where) < 2 or where[0] not in STAGES:
        return []
    mine = STAGES.index(where[0])
    out = []
    for m in imported_modules(path, root):
        if not m.startswith(service + "."):
            continue
        part = m.split(".")[2]
        if (STAGES.index(part) < mine) if part in STAGES else part not in SHARED:
            out.append(m)
    return out


def _files(package: str, root: Path = SRC) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


@pytest.mark.parametrize("path", _files("core"), ids=lambda p: str(p.relative_to(SRC)))
def test_core_is_stdlib_only(path):
    assert core_violations(path) == [], f"{path.name} imports outside core and the standard library"


@pytest.mark.parametrize("path", _files("adapters"), ids=lambda p: str(p.relative_to(SRC)))
def test_adapters_do_not_import_the_service_or_frameworks(path):
    assert adapter_violations(path) == [], f"{path.name} imports the service or a framework"


@pytest.mark.parametrize("path", _files("service"), ids=lambda p: str(p.relative_to(SRC)))
def test_service_stages_import_along_the_flow(path):
    assert flow_violations(path) == [], f"{path.name} imports an earlier stage or the wiring above the stages"


def test_every_service_module_has_a_place_in_the_flow():
    service = SRC / "service"
    for path in service.rglob("*.py"):
        top = path.relative_to(service).parts
        assert top[0] in {*STAGES, "process"} or top[0] in ROOT_MODULES, f"{top} is in no stage"


PLANTED = [
    # (file, source, which rule must catch it, the module it must name)
    ("core/x.py", "from luckrate.adapters.otlp import genai\n", core_violations, "luckrate.adapters.otlp.genai"),
    ("core/x.py", "import luckrate.service.app\n", core_violations, "luckrate.service.app"),
    ("core/x.py", "from luckrate import adapters\n", core_violations, "luckrate.adapters"),
    ("core/checks/x.py", "from ...adapters import trajectory\n", core_violations, "luckrate.adapters.trajectory"),
    ("core/x.py", "def f():\n    from luckrate.service import app\n", core_violations, "luckrate.service.app"),
    ("core/x.py", "import importlib\nimportlib.import_module('luckrate.suite')\n", core_violations, "luckrate.suite"),
    ("core/x.py", "import yaml\n", core_violations, "yaml"),
    ("adapters/otlp/x.py", "from luckrate import service\n", adapter_violations, "luckrate.service"),
    ("adapters/otlp/x.py", "from ...service.tally import Tally\n", adapter_violations, "luckrate.service.tally"),
    ("adapters/x.py", "from langgraph.graph import StateGraph\n", adapter_violations, "langgraph.graph"),
    # service stages: an earlier stage, relative or absolute, and the wiring above the stages
    (
        "service/assemble/x.py",
        "from luckrate.service.receive import status\n",
        flow_violations,
        "luckrate.service.receive",
    ),
    (
        "service/export/x.py",
        "from luckrate.service.grade.tally import Tally\n",
        flow_violations,
        "luckrate.service.grade.tally",
    ),
    (
        "service/grade/x.py",
        "from ..assemble.assembler import Assembler\n",
        flow_violations,
        "luckrate.service.assemble.assembler",
    ),
    (
        "service/grade/x.py",
        "def f():\n    from luckrate.service.assemble import intake\n",
        flow_violations,
        "luckrate.service.assemble.intake",
    ),
    (
        "service/receive/x.py",
        "from luckrate.service.process.pipeline import P\n",
        flow_violations,
        "luckrate.service.process.pipeline",
    ),
    ("service/export/x.py", "from luckrate.service import app\n", flow_violations, "luckrate.service.app"),
]


@pytest.mark.parametrize("file,source,rule,module", PLANTED, ids=[p[1].strip().splitlines()[-1] for p in PLANTED])
def test_a_planted_upward_import_is_caught(tmp_path, file, source, rule, module):
    root = tmp_path / "luckrate"
    planted = root / file
    planted.parent.mkdir(parents=True)
    planted.write_text(source)
    assert module in rule(planted, root)


@pytest.mark.parametrize(
    "file,source",
    [
        ("core/x.py", "from luckrate.core.step import Step\nimport collections.abc\n"),
        ("core/checks/x.py", "from ..spec import Spec\nfrom . import tools\n"),
        ("adapters/otlp/x.py", "from luckrate.adapters.otlp import genai\nfrom luckrate.core import spec\n"),
        (
            "service/receive/x.py",
            "from luckrate.service.assemble.intake import Intake\nfrom ..config import Endpoint\n",
        ),
        ("service/grade/x.py", "from ..export.telemetry import Recorder\nfrom luckrate.service.grade import tally\n"),
        ("service/process/x.py", "from luckrate.service.receive import status\nfrom luckrate.service import app\n"),
    ],
)
def test_an_allowed_import_is_not_flagged(tmp_path, file, source):
    root = tmp_path / "luckrate"
    planted = root / file
    planted.parent.mkdir(parents=True)
    planted.write_text(source)
    rules = {"core": core_violations, "adapters": adapter_violations, "service": flow_violations}
    assert rules[file.split("/")[0]](planted, root) == []


def test_convention_modules_form_no_cycle():
    # roles.py once imported the convention modules (lazily) that import it; the registry in
    # conventions.py is now the one place that knows them all.
    from luckrate.adapters.otlp.conventions import CONVENTIONS

    otlp = SRC / "adapters" / "otlp"
    roles = set(imported_modules(otlp / "roles.py"))
    assert not {
        m
        for m in roles
        if m.startswith("luckrate.adapters.otlp.")
        and m.rsplit(".", 1)[1] in {"conventions", "genai", "openinference", "traceloop"}
    }
    for convention in CONVENTIONS:
        module = convention.classify.__module__
        assert "luckrate.adapters.otlp.conventions" not in set(
            imported_modules(otlp / "conventions" / f"{module.rsplit('.', 1)[1]}.py")
        )


def global_statements(path: Path) -> list[int]:
    """Lines where a function rebinds a module global (state belongs to objects that own it)."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Global)]


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_state_is_rebound(path):
    assert global_statements(path) == [], f"{path.name} rebinds a module global"


def test_a_planted_global_rebinding_is_caught(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text("_KEYS = frozenset()\n\n\ndef keep(keys):\n    global _KEYS\n    _KEYS = _KEYS | keys\n")
    assert global_statements(planted) == [5]


def module_name(path: Path, root: Path = SRC) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_cycles(package: str, root: Path = SRC) -> list[list[str]]:
    """Every cycle among the modules of ``package`` (a directory under ``root``), as the modules on it in import
    order, the first repeated at the end; each import counts wherever it is written (a function, a TYPE_CHECKING
    block): a cycle hidden from the interpreter is still one a reader has to hold in mind."""
    modules = {module_name(p, root): p for p in _files(package, root)}
    edges = {m: sorted(_module_imports(p, root, modules.keys()) - {m}) for m, p in modules.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in edges[m]:
            if state.get(n) == 1:
                cycles.append([*path[path.index(n) :], n])
            elif n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(modules):
        if m not in state:
            visit(m)
    return cycles


def _module_imports(path: Path, root: Path, known: Iterable[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports. ``from pkg import sub`` imports the module ``pkg.sub`` when
    there is one, else a name of ``pkg``: the package's ``__init__`` runs first for any import of a submodule and
    is no edge of its own."""
    known = set(known)
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            [module, *names] = _from_import(node, path, root)
            out.update(f"{module}.{n}" if f"{module}.{n}" in known else module for n in names)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Call) and (name := _dynamic_name(node)):
            out.add(name)
    return out & known


def _from_import(node: ast.ImportFrom, path: Path, root: Path) -> list[str]:
    """The module a ``from`` import reads (relative ones resolved), then the names it imports."""
    if node.level:
        package = _package_of(path, root)
        base = package[: len(package) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [module, *(alias.name for alias in node.names if alias.name != "*")]


@pytest.mark.parametrize("package", ["core", "service", "adapters"])
def test_no_import_cycle(package):
    # spec.py once imported the check registry, which imports every check family, which imported Spec under
    # TYPE_CHECKING to get around the cycle; provenance.py and intent.py imported each other the same way.
    # In the adapters, compaction.py imported the convention registry (inside a function) while the registry
    # imported compaction: now each reader declares its keys, the registry collects them, compaction reads them.
    assert import_cycles(package) == []


@pytest.mark.parametrize(
    "files, cycle",
    [
        (
            {
                "core/spec.py": "from luckrate.core.checks import REGISTRY\n",
                "core/checks/__init__.py": "",
                "core/checks/tools.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from luckrate.core.spec import Spec\n",
                "core/__init__.py": "",
            },
            None,  # spec -> checks (the package) only: no cycle back to spec from the package itself
        ),
        (
            {
                "core/spec.py": "from luckrate.core.checks.tools import forbidden\n",
                "core/checks/tools.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from luckrate.core.spec import Spec\n",
            },
            ["luckrate.core.checks.tools", "luckrate.core.spec", "luckrate.core.checks.tools"],
        ),
        (
            {
                "core/provenance.py": "def of():\n    from luckrate.core import intent\n",
                "core/intent.py": "from .provenance import trace\n",
            },
            ["luckrate.core.intent", "luckrate.core.provenance", "luckrate.core.intent"],
        ),
    ],
)
def test_a_planted_cycle_is_caught(tmp_path, files, cycle):
    root = tmp_path / "luckrate"
    for name, source in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(source)
    found = import_cycles("core", root)
    assert found == ([] if cycle is None else [cycle])


PLANTED_ADAPTER_CYCLES = [
    # (what, files of a throwaway luckrate/adapters, the cycle the check must name; None: no cycle)
    (
        "a lazy import back",
        {
            "otlp/compaction.py": "from luckrate.adapters.otlp import spans\n",
            "otlp/spans.py": "def fresh():\n    from luckrate.adapters.otlp.compaction import Interning\n",
        },
        ["luckrate.adapters.otlp.compaction", "luckrate.adapters.otlp.spans", "luckrate.adapters.otlp.compaction"],
    ),
    (
        "a reader importing its registry",
        {
            "otlp/conventions/__init__.py": "from luckrate.adapters.otlp.conventions import genai\n",
            "otlp/conventions/genai.py": "from luckrate.adapters.otlp.conventions import KEYS\n",
        },
        [
            "luckrate.adapters.otlp.conventions",
            "luckrate.adapters.otlp.conventions.genai",
            "luckrate.adapters.otlp.conventions",
        ],
    ),
    (
        "three modules, relative and dynamic",
        {
            "otlp/a.py": "from . import b\n",
            "otlp/b.py": "from .c import x\n",
            "otlp/c.py": "import importlib\nimportlib.import_module('luckrate.adapters.otlp.a')\n",
        },
        [
            "luckrate.adapters.otlp.a",
            "luckrate.adapters.otlp.b",
            "luckrate.adapters.otlp.c",
            "luckrate.adapters.otlp.a",
        ],
    ),
    (
        # A reader importing a sibling through the package's path runs the package's __init__ (the registry,
        # which imports the reader) first: no edge, or every package with a registry in its __init__ would be
        # a cycle.
        "a registry importing its readers, a reader its sibling",
        {
            "otlp/conventions/__init__.py": "from luckrate.adapters.otlp.conventions import a, b\n",
            "otlp/conventions/a.py": "from luckrate.adapters.otlp.conventions import b\n",
            "otlp/conventions/b.py": "from luckrate.adapters.otlp.conventions.c import x\n",
            "otlp/conventions/c.py": "from luckrate.adapters.otlp import spans\n",
            "otlp/spans.py": "",
        },
        None,
    ),
]


@pytest.mark.parametrize("what,files,cycle", PLANTED_ADAPTER_CYCLES, ids=[c[0] for c in PLANTED_ADAPTER_CYCLES])
def test_a_planted_adapter_cycle_is_caught(tmp_path, what, files, cycle):
    root = tmp_path / "luckrate"
    for name, source in files.items():
        (root / "adapters" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "adapters" / name).write_text(source)
    assert import_cycles("adapters", root) == ([] if cycle is None else [cycle])
