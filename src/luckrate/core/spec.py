"""The spec: a plain dict validated up front into a frozen ``Spec``.

Every problem is reported at once, with its location, before anything runs:

    InvalidSpec: 2 problems in spec 'refunds'
      before[1][1]: unknown tool 'refnd' (did you mean 'refund'?)
      severity.max_steps: 'hrad' is not one of hard, soft, warn, info, off
"""

from __future__ import annotations

import difflib
import json
import re
import runpy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from luckrate.core.checks import DEFAULT_SEVERITY, SPEC_KEYS
from luckrate.core.policy import DEFAULT_CONFIRM, ArgRule, Order, value_key
from luckrate.core.violation import Severity

_TOOL_LISTS = ("required", "forbidden", "untrusted", "privileged")
_KEYS = {"tools", "severity", *SPEC_KEYS}
"""The keys a spec may have: the vocabulary, severity overrides, and the keys the checks own (``REGISTRY``)."""


class InvalidSpec(ValueError):
    """A spec that cannot be used; ``problems`` lists each as ``(location, message)``."""

    def __init__(self, name: str, problems: list[tuple[str, str]]):
        self.name = name
        self.problems = problems
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        lines = [f"{count} in spec {name!r}"] + [
            f"  {where}: {msg}" if where else f"  {msg}" for where, msg in problems
        ]
        super().__init__("\n".join(lines))


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


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return frozenset((k, _hashable(v)) for k, v in value.items())
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, MappingProxyType):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Spec:
    """A validated spec, immutable and hashable by value. Tool sets are frozensets, mappings read-only;
    ``tools`` empty means no vocabulary was declared."""

    name: str = "spec"
    tools: tuple[str, ...] = ()
    """The vocabulary, in the spec's order; empty = undeclared (``unknown_tool`` and name checks are off)."""
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    before: tuple[tuple[str, str], ...] = ()
    """Pairs ``(a, b)``: every call to ``b`` comes after some call to ``a``."""
    max_steps: int | None = None
    max_failures: int = 3
    """Consecutive failed calls to one tool (no other tool between) that make a ``failing_loop``."""
    max_duration: float | None = None
    untrusted: frozenset[str] = frozenset()
    """Tools whose output a third party can write (the tool names, whichever form the spec used)."""
    untrusted_fields: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per tool named in the dict form of ``untrusted``: the untrusted field names (case-folded), or
    ``{"*"}`` for the whole result. A tool from the list form is absent: its free text is untrusted."""
    privileged: frozenset[str] = frozenset()
    trusted_records: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """Per untrusted tool: field name (case-folded) -> patterns (case-folded, ``*`` and ``?`` as in file names). A
    record of the tool's result whose value field matches one is trusted whole: the platform's own messages,
    ``{"read_inbox": {"sender": ["no-reply@bank.example"]}}``."""
    overrides: Mapping[str, Severity] = field(default_factory=dict)
    orders: tuple[Order, ...] = ()
    """The dict form of ``before``: every call to a ``then`` tool needs an earlier successful ``first`` call."""
    confirm: frozenset[str] = frozenset()
    """Tools whose every call needs an affirmative user turn after the agent's last message."""
    confirm_pattern: re.Pattern[str] | None = None
    """What affirms (``DEFAULT_CONFIRM`` unless the spec sets ``confirm_pattern``)."""
    terminal: frozenset[str] = frozenset()
    """Tools after whose successful call no tool call may follow."""
    once_per: Mapping[str, str] = field(default_factory=dict)
    """Tool -> argument: at most one successful call per distinct value of that argument."""
    max_parallel: int | None = None
    """At most this many tool calls issued in one model turn."""
    args: Mapping[str, Mapping[str, ArgRule]] = field(default_factory=dict)
    """Tool -> argument -> the rule its value must keep."""

    def __post_init__(self) -> None:
        # Truly frozen: the mappings become read-only views of copies, so changing the dict a spec was built
        # from, or the spec's own mapping, cannot turn a check off after validation.
        for name in ("untrusted_fields", "overrides", "once_per"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        records = {tool: MappingProxyType(dict(rules)) for tool, rules in self.trusted_records.items()}
        object.__setattr__(self, "trusted_records", MappingProxyType(records))
        args = {tool: MappingProxyType(dict(rules)) for tool, rules in self.args.items()}
        object.__setattr__(self, "args", MappingProxyType(args))

    def __hash__(self) -> int:
        """By value, worked out once (a spec is immutable): equal specs share a grading plan."""
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(_hashable(getattr(self, f.name)) for f in fields(self)))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __reduce__(self) -> tuple[type[Spec], tuple[Any, ...]]:
        # Pickles (and copies) as its fields, the read-only views as plain dicts (a view does not pickle).
        return type(self), tuple(_plain(getattr(self, f.name)) for f in fields(self))

    def severity(self, check: str) -> Severity:
        return self.overrides.get(check, DEFAULT_SEVERITY[check])

    def enabled(self, check: str) -> bool:
        return self.severity(check) is not Severity.OFF

    @property
    def taint_declared(self) -> bool:
        """Taint is off unless the spec names both untrusted sources and privileged sinks."""
        return bool(self.untrusted) and bool(self.privileged)

    @classmethod
    def from_dict(cls, raw: Any, name: str = "spec") -> Spec:
        """Validate ``raw`` and build a Spec; raise InvalidSpec listing every problem."""
        problems: list[tuple[str, str]] = []
        if not isinstance(raw, Mapping):
            raise InvalidSpec(name, [("", f"a spec must be a dict, got {type(raw).__name__}")])
        for key in raw:
            if key not in _KEYS:
                problems.append((str(key), f"unknown key{_suggest(str(key), _KEYS)}"))
        tools = _names(raw.get("tools", ()), "tools", problems)
        vocab = set(tools)
        untrusted_fields = _untrusted_fields(raw.get("untrusted"), problems, vocab)
        lists = {
            key: _names(raw.get(key, ()), key, problems, vocab)
            for key in _TOOL_LISTS
            if not (key == "untrusted" and isinstance(raw.get(key), Mapping))
        }
        lists.setdefault("untrusted", list(untrusted_fields))
        trusted_records = _trusted_records(raw.get("trusted_records", {}), problems, set(lists["untrusted"]))
        before = _pairs(raw.get("before", ()), problems, vocab)
        overrides = _overrides(raw.get("severity", {}), problems)
        max_steps = _number(raw, "max_steps", int, problems)
        max_failures = _number(raw, "max_failures", int, problems)
        max_duration = _number(raw, "max_duration", float, problems)
        policy = _policy(raw, problems, vocab)
        if problems:
            raise InvalidSpec(name, problems)
        return cls(
            name=name,
            tools=tuple(dict.fromkeys(tools)),
            required=frozenset(lists["required"]),
            forbidden=frozenset(lists["forbidden"]),
            untrusted=frozenset(lists["untrusted"]),
            privileged=frozenset(lists["privileged"]),
            untrusted_fields=untrusted_fields,
            trusted_records=trusted_records,
            before=before,
            max_steps=max_steps,
            max_failures=3 if max_failures is None else max_failures,
            max_duration=max_duration,
            overrides=overrides,
            **policy,
        )


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _names(value: Any, key: str, problems: list[tuple[str, str]], vocab: set[str] | None = None) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        problems.append((key, f"must be a list of tool names, got {type(value).__name__}"))
        return []
    names = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            problems.append((f"{key}[{i}]", f"must be a tool name (non-empty string), got {item!r}"))
        elif vocab and item not in vocab:
            problems.append((f"{key}[{i}]", f"unknown tool {item!r}{_suggest(item, vocab)}"))
        else:
            names.append(item)
    return names


def _untrusted_fields(value: Any, problems: list[tuple[str, str]], vocab: set[str]) -> dict[str, frozenset[str]]:
    """The dict form of ``untrusted``: ``{"fetch_mail": ["body", "subject"], "fetch_page": "*"}``."""
    if not isinstance(value, Mapping):
        return {}
    out = {}
    for tool, named in value.items():
        where = f"untrusted.{tool}"
        if not isinstance(tool, str) or not tool:
            problems.append(("untrusted", f"keys must be tool names (non-empty strings), got {tool!r}"))
            continue
        if vocab and tool not in vocab:
            problems.append((where, f"unknown tool {tool!r}{_suggest(tool, vocab)}"))
            continue
        if named == "*":
            out[tool] = frozenset({"*"})
            continue
        if isinstance(named, str) or not isinstance(named, (list, tuple)) or not named:
            problems.append((where, f'must be "*" or a non-empty list of field names, got {named!r}'))
            continue
        bad = [i for i, f in enumerate(named) if not isinstance(f, str) or not f]
        for i in bad:
            problems.append((f"{where}[{i}]", f"must be a field name (non-empty string), got {named[i]!r}"))
        if not bad:
            out[tool] = frozenset(f.casefold() for f in named)
    return out


def _trusted_records(
    value: Any, problems: list[tuple[str, str]], untrusted: set[str]
) -> dict[str, dict[str, tuple[str, ...]]]:
    """``{"read_inbox": {"sender": ["no-reply@bank.example", "*@alerts.bank.example"]}}``: per untrusted tool,
    field name -> the patterns of the values that make a record trusted."""
    if not isinstance(value, Mapping):
        problems.append(("trusted_records", f"must be a dict of tool to {{field: [patterns]}}, got {value!r}"))
        return {}
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for tool, rules in value.items():
        where = f"trusted_records.{tool}"
        if tool not in untrusted:
            problems.append(
                (where, f"not an untrusted tool{_suggest(str(tool), untrusted)}: only its records can be trusted")
            )
            continue
        if not isinstance(rules, Mapping) or not rules:
            problems.append((where, f"must be a non-empty dict of field name to a list of patterns, got {rules!r}"))
            continue
        fields_out = {}
        for name, patterns in rules.items():
            at = f"{where}.{name}"
            if not isinstance(name, str) or not name:
                problems.append((where, f"keys must be field names (non-empty strings), got {name!r}"))
            elif isinstance(patterns, str) or not isinstance(patterns, (list, tuple)) or not patterns:
                problems.append((at, f"must be a non-empty list of patterns, got {patterns!r}"))
            elif any(not isinstance(p, str) or not p.strip("*?") for p in patterns):
                bad = next(p for p in patterns if not isinstance(p, str) or not p.strip("*?"))
                problems.append((at, f"a pattern must name something besides * and ?, got {bad!r}"))
            else:
                fields_out[name.casefold()] = tuple(p.casefold() for p in patterns)
        if fields_out:
            out[tool] = fields_out
    return out


def _pairs(value: Any, problems: list[tuple[str, str]], vocab: set[str]) -> tuple[tuple[str, str], ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        problems.append(("before", f"must be a list of (earlier, later) pairs, got {type(value).__name__}"))
        return ()
    pairs = []
    for i, pair in enumerate(value):
        if isinstance(pair, Mapping):
            continue  # the dict form: _orders reads it
        if isinstance(pair, str) or not isinstance(pair, (list, tuple)) or len(pair) != 2:
            problems.append((f"before[{i}]", f"must be a pair (earlier_tool, later_tool), got {pair!r}"))
            continue
        found = _names(list(pair), f"before[{i}]", problems, vocab)
        if len(found) == 2:
            pairs.append((found[0], found[1]))
    return tuple(pairs)


def _overrides(value: Any, problems: list[tuple[str, str]]) -> dict[str, Severity]:
    if not isinstance(value, Mapping):
        problems.append(("severity", f"must be a dict of check name to severity, got {type(value).__name__}"))
        return {}
    out = {}
    allowed = ", ".join(s.value for s in Severity)
    for check, sev in value.items():
        if check not in DEFAULT_SEVERITY:
            problems.append((f"severity.{check}", f"unknown check{_suggest(str(check), DEFAULT_SEVERITY)}"))
        elif sev not in {s.value for s in Severity}:
            problems.append((f"severity.{check}", f"{sev!r} is not one of {allowed}"))
        else:
            out[check] = Severity(sev)
    return out


def _number(raw: Mapping[str, Any], key: str, kind: type, problems: list[tuple[str, str]]) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    accepted = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, accepted) or value <= 0:
        problems.append((key, f"must be a positive {'integer' if kind is int else 'number'}, got {value!r}"))
        return None
    return kind(value)


# ---- The policy keys: before's dict form, confirm, terminal, once_per, max_parallel, args ----

_RULE_KEYS = ("in", "min", "max", "match", "from")


def _policy(raw: Mapping[str, Any], problems: list[tuple[str, str]], vocab: set[str]) -> dict[str, Any]:
    """The policy keys' fields of ``Spec``, validated; problems are appended with their location."""
    return {
        "orders": _orders(raw.get("before", ()), problems, vocab),
        "confirm": frozenset(_names(raw.get("confirm", ()), "confirm", problems, vocab)),
        "confirm_pattern": _regex(raw.get("confirm_pattern", DEFAULT_CONFIRM), "confirm_pattern", problems),
        "terminal": frozenset(_names(raw.get("terminal", ()), "terminal", problems, vocab)),
        "once_per": _once_per(raw.get("once_per", {}), problems, vocab),
        "max_parallel": _number(raw, "max_parallel", int, problems),
        "args": _args(raw.get("args", {}), problems, vocab),
    }


def _orders(value: Any, problems: list[tuple[str, str]], vocab: set[str]) -> tuple[Order, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        return ()  # _pairs reports it
    orders = []
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping):
            continue
        where = f"before[{i}]"
        for key in entry:
            if key not in ("first", "then", "same"):
                problems.append((f"{where}.{key}", f"unknown key{_suggest(str(key), ('first', 'then', 'same'))}"))
        first = _one_or_many(entry.get("first"), f"{where}.first", problems, vocab)
        then = _one_or_many(entry.get("then"), f"{where}.then", problems, vocab)
        same = _same(entry.get("same"), f"{where}.same", problems)
        if first and then:
            orders.append(Order(frozenset(first), frozenset(then), same))
    return tuple(orders)


def _one_or_many(value: Any, where: str, problems: list[tuple[str, str]], vocab: set[str]) -> list[str]:
    if value is None:
        problems.append((where, "missing: a tool name or a list of tool names"))
        return []
    names = _names([value] if isinstance(value, str) else value, where, problems, vocab)
    if not names and isinstance(value, (list, tuple)) and not value:
        problems.append((where, "must name at least one tool"))
    return names


def _same(value: Any, where: str, problems: list[tuple[str, str]]) -> tuple[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str) and value:
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) and v for v in value):
        return value[0], value[1]
    problems.append(
        (where, f"must be an argument name or [argument in then call, argument in first call], got {value!r}")
    )
    return None


def _regex(value: Any, where: str, problems: list[tuple[str, str]]) -> re.Pattern[str] | None:
    if not isinstance(value, str):
        problems.append((where, f"must be a regular expression (a string), got {type(value).__name__}"))
        return None
    try:
        return re.compile(value)
    except re.error as e:
        problems.append((where, f"bad regular expression {value!r}: {e}"))
        return None


def _tool_dict(value: Any, key: str, what: str, problems: list[tuple[str, str]], vocab: set[str]) -> dict[str, Any]:
    """A dict keyed by tool name, with unknown tools reported (the values are the caller's)."""
    if not isinstance(value, Mapping):
        problems.append((key, f"must be a dict of tool name to {what}, got {type(value).__name__}"))
        return {}
    out = {}
    for tool, inner in value.items():
        if not isinstance(tool, str) or not tool:
            problems.append((key, f"must be keyed by tool names, got {tool!r}"))
        elif vocab and tool not in vocab:
            problems.append((f"{key}.{tool}", f"unknown tool {tool!r}{_suggest(tool, vocab)}"))
        else:
            out[tool] = inner
    return out


def _once_per(value: Any, problems: list[tuple[str, str]], vocab: set[str]) -> dict[str, str]:
    out = {}
    for tool, arg in _tool_dict(value, "once_per", "argument name", problems, vocab).items():
        if isinstance(arg, str) and arg:
            out[tool] = arg
        else:
            problems.append((f"once_per.{tool}", f"must be an argument name (non-empty string), got {arg!r}"))
    return out


def _args(value: Any, problems: list[tuple[str, str]], vocab: set[str]) -> dict[str, dict[str, ArgRule]]:
    out: dict[str, dict[str, ArgRule]] = {}
    for tool, rules in _tool_dict(value, "args", "{argument: rule}", problems, vocab).items():
        if not isinstance(rules, Mapping) or not rules:
            problems.append((f"args.{tool}", f"must be a non-empty dict of argument name to rule, got {rules!r}"))
            continue
        for arg, rule in rules.items():
            parsed = _rule(rule, f"args.{tool}.{arg}", problems, vocab)
            if parsed is not None:
                out.setdefault(tool, {})[str(arg)] = parsed
    return out


def _rule(rule: Any, where: str, problems: list[tuple[str, str]], vocab: set[str]) -> ArgRule | None:
    if not isinstance(rule, Mapping) or not rule:
        problems.append((where, f"must be a rule: a dict with any of {', '.join(_RULE_KEYS)}, got {rule!r}"))
        return None
    before = len(problems)
    for key in rule:
        if key not in _RULE_KEYS:
            problems.append((f"{where}.{key}", f"unknown rule{_suggest(str(key), _RULE_KEYS)}"))
    allowed = None
    if "in" in rule:
        values = rule["in"]
        if isinstance(values, (str, Mapping)) or not isinstance(values, (list, tuple)) or not values:
            problems.append((f"{where}.in", f"must be a non-empty list of allowed values, got {values!r}"))
        else:
            allowed = frozenset(value_key(v) for v in values)
    low, high = (_bound(rule, k, where, problems) for k in ("min", "max"))
    if low is not None and high is not None and low > high:
        problems.append((where, f"min {low!r} is greater than max {high!r}"))
    match = _regex(rule["match"], f"{where}.match", problems) if "match" in rule else None
    sources = _sources(rule["from"], f"{where}.from", problems, vocab) if "from" in rule else None
    if len(problems) > before:
        return None
    return ArgRule(allowed, low, high, match, sources)


def _bound(rule: Mapping[str, Any], key: str, where: str, problems: list[tuple[str, str]]) -> float | None:
    value = rule.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problems.append((f"{where}.{key}", f"must be a number, got {value!r}"))
        return None
    return value


def _sources(value: Any, where: str, problems: list[tuple[str, str]], vocab: set[str]) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        problems.append((where, f'must be a non-empty list of sources ("user", "tool:NAME"), got {value!r}'))
        return frozenset()
    out = set()
    for i, source in enumerate(value):
        tool = source.removeprefix("tool:") if isinstance(source, str) and source.startswith("tool:") else None
        if source == "user":
            out.add(source)
        elif not tool:
            problems.append((f"{where}[{i}]", f'must be "user" or "tool:NAME", got {source!r}'))
        elif vocab and tool not in vocab:
            problems.append((f"{where}[{i}]", f"unknown tool {tool!r}{_suggest(tool, vocab)}"))
        else:
            out.add(source)
    return frozenset(out)


FALLBACK = "*"


def specs_from_object(obj: Mapping[str, Any], source: str) -> dict[str, Spec]:
    """Read ``SPEC`` (one spec, used for every agent) or ``SPECS`` (agent name -> spec, ``*`` fallback)."""
    if "SPECS" in obj:
        specs = obj["SPECS"]
        if not isinstance(specs, Mapping) or not specs:
            raise InvalidSpec(source, [("SPECS", "must be a non-empty dict of agent name to spec")])
        return {str(agent): Spec.from_dict(raw, name=str(agent)) for agent, raw in specs.items()}
    if "SPEC" in obj:
        return {FALLBACK: Spec.from_dict(obj["SPEC"], name=Path(source).stem)}
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


def spec_for(specs: Mapping[str, Spec], agent: str | None) -> Spec | None:
    """The spec for ``agent``: its own entry, else the ``*`` fallback, else None."""
    if agent is not None and agent in specs:
        return specs[agent]
    return specs.get(FALLBACK)
