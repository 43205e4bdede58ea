"""Loading specs: a dict validated against the registered checks, and spec files (Python or JSON).

Each check owns its spec keys (core/checks: ``Check.keys`` and ``Check.parse``); ``spec_from_dict`` accepts ``tools``,
``severity`` and the keys the registered checks own, hands each check's parser the raw dict (core/spec_keys.py),
and reports every problem at once with its location.
"""

from __future__ import annotations

import json
import runpy
from collections.abc import Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from luckrate.core.checks import REGISTRY, Check
from luckrate.core.spec import FALLBACK, InvalidSpec, Spec
from luckrate.core.spec_keys import Keys, names, suggest
from luckrate.core.violation import Severity

_FIELDS = frozenset(f.name for f in fields(Spec)) - {"name", "tools", "overrides", "severities", "options"}


def spec_from_dict(raw: Any, name: str = "spec", checks: Iterable[Check] = REGISTRY) -> Spec:
    """Validate ``raw`` against ``checks`` (the registry unless given) and build a Spec; raise InvalidSpec listing
    every problem."""
    checks = tuple(checks)
    if not isinstance(raw, Mapping):
        raise InvalidSpec(name, [("", f"a spec must be a dict, got {type(raw).__name__}")])
    problems: list[tuple[str, str]] = []
    known = {"tools", "severity", *(k for c in checks for k in c.keys)}
    for key in raw:
        if key not in known:
            problems.append((str(key), f"unknown key{suggest(str(key), known)}"))
    tools = names(raw.get("tools", ()), "tools", problems)
    keys = Keys(raw, tools, problems)
    for check in checks:
        if check.parse is not None:
            keys.parsed.update(check.parse(keys))
    defaults = {c.name: c.severity for c in checks if c.severity is not None}
    overrides = _overrides(raw.get("severity", {}), defaults, problems)
    if problems:
        raise InvalidSpec(name, problems)
    own = {k: v for k, v in keys.parsed.items() if k in _FIELDS}
    options = {k: v for k, v in keys.parsed.items() if k not in _FIELDS}
    return Spec(
        name=name,
        tools=tuple(dict.fromkeys(tools)),
        overrides=overrides,
        severities={**defaults, **overrides},
        options=options,
        **own,
    )


def _overrides(value: Any, defaults: Mapping[str, Severity], problems: list[tuple[str, str]]) -> dict[str, Severity]:
    if not isinstance(value, Mapping):
        problems.append(("severity", f"must be a dict of check name to severity, got {type(value).__name__}"))
        return {}
    out = {}
    allowed = ", ".join(s.value for s in Severity)
    for check, sev in value.items():
        if check not in defaults:
            problems.append((f"severity.{check}", f"unknown check{suggest(str(check), defaults)}"))
        elif sev not in {s.value for s in Severity}:
            problems.append((f"severity.{check}", f"{sev!r} is not one of {allowed}"))
        else:
            out[check] = Severity(sev)
    return out


class SpecFileError(InvalidSpec):
    """A Python spec file that raised while loading (a SyntaxError, an ImportError, any exception):
    ``path:line: SyntaxError: message``, the line being the spec file's own where it is known."""

    def __init__(self, path: str, error: Exception):
        line = _spec_line(path, error)
        detail = error.msg if isinstance(error, SyntaxError) else str(error)
        where = f"{path}:{line}" if line else path
        super().__init__(path, [(where, f"{type(error).__name__}: {detail}" if detail else type(error).__name__)])

    def __str__(self) -> str:
        where, message = self.problems[0]
        return f"{where}: {message}"


def _spec_line(path: str, error: Exception) -> int | None:
    """The line in ``path`` where ``error`` arose: the SyntaxError's own, else the deepest frame in the file."""
    if isinstance(error, SyntaxError) and error.filename == path:
        return error.lineno
    line = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def specs_from_object(obj: Mapping[str, Any], source: str) -> dict[str, Spec]:
    """Read ``SPEC`` (one spec, used for every agent) or ``SPECS`` (agent name -> spec, ``*`` fallback)."""
    if "SPECS" in obj:
        specs = obj["SPECS"]
        if not isinstance(specs, Mapping) or not specs:
            raise InvalidSpec(source, [("SPECS", "must be a non-empty dict of agent name to spec")])
        return {str(agent): spec_from_dict(raw, name=str(agent)) for agent, raw in specs.items()}
    if "SPEC" in obj:
        return {FALLBACK: spec_from_dict(obj["SPEC"], name=Path(source).stem)}
    raise InvalidSpec(source, [("", "defines neither SPEC nor SPECS")])


class NotASpecFile(InvalidSpec):
    """A ``--spec`` file that holds data, not a spec: most often a runs file given as the spec."""

    def __init__(self, path: str, message: str):
        super().__init__(path, [(path, message)])

    def __str__(self) -> str:
        where, message = self.problems[0]
        return f"{where}: {message}"


_RUNS_KEYS = ("steps", "resourceSpans", "resourceLogs")
"""Top-level keys of a run (the trajectory form) or an OTLP/JSON export: never a spec's."""
_RUNS_FILE = (
    "holds {form}, not a spec: give it as a FILE to grade, and with --spec a Python file "
    "that defines SPEC or SPECS (or a .json file of the same shape)"
)


def _runs_form(text: str) -> str | None:
    """What runs file ``text`` is (``runs in the trajectory form (JSON Lines)``, ``OTLP/JSON traces``), or
    None when it is not one: JSON whose first document is a run or an OTLP/JSON export."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    for candidate in (first, text):
        lines = candidate is first and first.strip() != text.strip()
        try:
            doc = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, Mapping) and any(key in doc for key in _RUNS_KEYS):
            otlp = "resourceSpans" in doc or "resourceLogs" in doc
            return ("OTLP/JSON traces" if otlp else "runs in the trajectory form") + (" (JSON Lines)" if lines else "")
        return None
    return None


def load_specs(path: str | Path) -> dict[str, Spec]:
    """Load specs from a Python file (defining SPEC or SPECS) or a JSON file of the same shape.

    A Python spec file runs when loaded: it is trusted configuration. Where the channel that
    delivers specs is not trusted, use JSON (``{"SPEC": {...}}``, ``{"SPECS": {...}}`` or a bare spec).
    Raises InvalidSpec for a bad spec (SpecFileError when a Python file raises while loading) and OSError
    for an unreadable file.
    """
    path = Path(path)
    text = _read_text(path)
    form = _runs_form(text) if text.lstrip()[:1] == "{" else None
    if form:
        raise NotASpecFile(str(path), _RUNS_FILE.format(form=form))
    if path.suffix == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidSpec(str(path), [(f"line {e.lineno}", f"invalid JSON ({e.msg})")]) from None
        except (RecursionError, ValueError) as e:  # nested too deeply; an integer over 4300 digits
            raise InvalidSpec(str(path), [("", f"invalid JSON ({str(e)[:100] or type(e).__name__})")]) from None
        if isinstance(obj, Mapping) and not {"SPEC", "SPECS"} & obj.keys():
            obj = {"SPEC": obj}
        if not isinstance(obj, Mapping):
            raise InvalidSpec(str(path), [("", "a JSON spec file holds an object")])
        return specs_from_object(obj, str(path))
    try:
        obj = runpy.run_path(str(path))
    except Exception as e:  # the spec's own code failed: bad input (exit 2), not a failed gate (exit 1)
        raise SpecFileError(str(path), e) from None
    return specs_from_object(obj, str(path))


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"spec file not found: {path}")
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InvalidSpec(str(path), [("", f"cannot read ({e.strerror})")]) from None
