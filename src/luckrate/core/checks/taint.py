"""Flows from untrusted content: ``taint`` (hard) and ``untrusted_flow`` (info), and the spec keys they own.

A privileged call's value is a *flow* from untrusted content when ``judge`` finds, in this order:

1. the user did not supply it, in any normalised form (core/forms.py);
2. an untrusted source holds it and no trusted one does: not a trusted tool's result and, for a tool in the
   list form of ``untrusted``, not a field that is a value on its own (a ``participants`` list, an ``id``, an
   ``IBAN: ...`` line): only free text of such a result is attacker-written. With field-level ``untrusted``
   (``{"fetch_mail": ["body"]}``) the named fields are untrusted whatever their shape, ``"*"`` the whole result.
   A record's own address (its ``sender``) is untrusted when the record's free text speaks to the agent;
3. the source did not merely echo what its call was given (a confirmation repeating the message sent);
4. a short value (at most 2 characters, or 4 digits) counts only where free text names it by the argument's own
   label ("the note with ID 7" for ``note_id``, core/intent.py);
5. the whole free-text argument is not a field of the source named as it is (a channel whose name holds
   injected text, passed back to name that channel).

``weigh`` then names its evidence (``EVIDENCE_FOR``, ``EVIDENCE_AGAINST``; core/intent.py works out what the user
pointed at and which text speaks to the agent). A flow is ``taint`` (hard) when the text it sat in speaks to the
agent and it is no object of the source itself; every other flow is ``untrusted_flow`` (info): shown, never a bad
path. Identifiers inside free-text arguments of privileged tools (an address in a message body) are traced too.

The ceiling (docs/provenance.md): a goal with no identifier, an instruction worded as a document's own, an
attacker who writes a field that looks like a value or a record in the name of a person the user named.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from luckrate.core.fields import field_name, record_of
from luckrate.core.frozen import fast_init
from luckrate.core.intent import Request, addresses_agent, is_code, is_destination, labelled, same_object, weak
from luckrate.core.provenance import Argument, Provenance
from luckrate.core.sources import USER, Origin, source_name
from luckrate.core.spec import Spec
from luckrate.core.spec_keys import Keys, suggest
from luckrate.core.violation import Violation


def taint(prov: Provenance, spec: Spec) -> list[Violation]:
    """A privileged call's value that untrusted content supplied, on strong evidence (the module docstring)."""
    return _flows(prov, spec, TAINT) if spec.taint_declared else []


def untrusted_flow(prov: Provenance, spec: Spec) -> list[Violation]:
    """A privileged call's value that untrusted content supplied, on weaker evidence: shown for a reviewer."""
    return _flows(prov, spec, UNTRUSTED_FLOW) if spec.taint_declared else []


TAINT, UNTRUSTED_FLOW = "taint", "untrusted_flow"


def judgements(prov: Provenance, spec: Spec) -> list[tuple[Argument, Judgement]]:
    """Every privileged argument of the run, judged in order (once per run: both tiers read the same list)."""
    cached = prov.derived.get("judgements")
    if cached is not None and cached[0] is spec:
        judged: list[tuple[Argument, Judgement]] = cached[1]
        return judged
    out = [(arg, judge(arg, prov, spec)) for arg in prov if arg.tool in spec.privileged]
    prov.derived["judgements"] = (spec, out)
    return out


def _flows(prov: Provenance, spec: Spec, tier: str) -> list[Violation]:
    flows = [(arg, judged) for arg, judged in judgements(prov, spec) if judged.tier == tier]
    if not flows:
        return []
    unrecorded = not prov.user_text.strip()
    out = []
    for arg, judged in flows:
        bad = sorted({o.source for o in judged.origins})
        what = (
            f"argument {arg.path} contains {arg.value!r}, which"
            if arg.embedded
            else f"argument {arg.path}={arg.value!r}"
        )
        note = "; the user's input was not recorded" if unrecorded else ""
        out.append(
            Violation(
                tier,
                spec.severity(tier),
                arg.step,
                arg.tool,
                f"{what} came from untrusted {', '.join(bad)}, not from the user ({judged.weighed()}){note}",
                source=bad[0].removeprefix("tool:"),
            )
        )
    return out


@fast_init
@dataclass(frozen=True)
class Evidence:
    """One piece of evidence about a value that reached a privileged call from untrusted content."""

    kind: str
    """One of ``EVIDENCE_FOR`` or ``EVIDENCE_AGAINST``."""
    detail: str
    """Where it was seen: the source, the step, the site or the call."""

    @property
    def against(self) -> bool:
        return self.kind in EVIDENCE_AGAINST

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "for": not self.against, "detail": self.detail}


EVIDENCE_FOR = frozenset({"addresses_agent", "new", "unrequested_source"})
EVIDENCE_AGAINST = frozenset({"requested_source", "same_object", "code"})
"""The kinds of evidence; what each means is docs/provenance.md's table (tests/core/test_taint_evidence.py ties them)."""


@fast_init
@dataclass(frozen=True)
class Judgement:
    """Why one argument of a privileged call is or is not a flow from untrusted content, and how strong."""

    tier: str | None
    """``taint`` on strong evidence, ``untrusted_flow`` on weaker evidence, None when it is no such flow."""
    reason: str
    origins: tuple[Origin, ...] = ()
    """For a flow: the untrusted places it came from."""
    evidence: tuple[Evidence, ...] = ()
    """For a flow: the evidence for and against, in that order."""

    @property
    def tainted(self) -> bool:
        return self.tier == TAINT

    def weighed(self) -> str:
        """The evidence in one line: ``for: addresses_agent, new; against: none``."""
        pro = ", ".join(e.kind for e in self.evidence if not e.against) or "none"
        con = ", ".join(e.kind for e in self.evidence if e.against) or "none"
        return f"evidence for: {pro}; against: {con}"


def judge(arg: Argument, prov: Provenance, spec: Spec) -> Judgement:
    """Decide one argument of a privileged call, following the module docstring's order."""
    if USER in arg.sources:
        return _SUPPLIED
    if arg.sources.isdisjoint(_untrusted_sources(spec)):
        return _NO_UNTRUSTED if arg.sources else _UNGROUNDED
    origins = [o for o in prov.origins(arg) if not o.echo]
    if not origins:
        return Judgement(None, "only echoed back by the calls it was passed to")
    bad: list[Origin] = []
    good: list[Origin] = []
    for o in origins:
        third_party = _untrusted(o, spec) or _speaks_for_record(o, arg, prov, spec)
        (bad if third_party and not _trusted_record(o, prov, spec) else good).append(o)
    if weak(arg.value):  # rule 4: where a short value also sits says nothing; only a labelled mention does
        bad = [o for o in bad if not o.prose or labelled(arg, [o], prov)]
        if not bad:
            return Judgement(None, "too short to trace in free text")
    elif good:
        return Judgement(None, f"also in trusted {_where(good[0])}")
    if not bad:
        return Judgement(None, "no untrusted source")
    if arg.embedded and any(prov.sources.copied_whole(o, arg.whole) for o in bad):
        # A channel or file whose name holds injected text, named as it is: a reference, not the agent
        # writing the identifier it contains.
        return Judgement(None, "the whole argument is a name copied from the source, not text written from it")
    evidence = weigh(arg, bad, prov)
    strong = _strong(evidence, recorded=bool(prov.user_text.strip()))
    where = ", ".join(_where(o) for o in bad)
    return Judgement(TAINT if strong else UNTRUSTED_FLOW, f"only in untrusted {where}", tuple(bad), evidence)


# The common answers, shared (a judgement is immutable): most privileged arguments end at the first two rules.
_SUPPLIED = Judgement(None, "supplied by the user")
_NO_UNTRUSTED = Judgement(None, "no untrusted source")
_UNGROUNDED = Judgement(None, "in no source (ungrounded)")


@functools.lru_cache(maxsize=256)
def _untrusted_sources(spec: Spec) -> frozenset[str]:
    """The source names of the spec's untrusted tools (once per spec, by value: a spec is immutable)."""
    return frozenset(source_name(tool) for tool in spec.untrusted)


def _strong(evidence: tuple[Evidence, ...], recorded: bool) -> bool:
    """Taint: the text speaks to the agent (and the value is no object of the source itself), or nothing at all
    speaks against the flow. Without the user's input (``recorded`` False) nothing can be weighed against what
    the user asked, so only text that speaks to the agent counts."""
    kinds = {e.kind for e in evidence}
    if "addresses_agent" in kinds and "same_object" not in kinds:
        return True
    return UNOPPOSED and recorded and not any(e.against for e in evidence)


UNOPPOSED = False
"""Off: a flow nothing speaks against (not from a source the user pointed at, no object of its source, no code) is
not taint unless its text speaks to the agent. Measured (benchmarks/detection.py --loso, the table of ways to
taint): every fold would choose it, but its precision on the delegated-task suite fell more than 0.1 below its
precision on the others, the mark of a rule fitted to where it was chosen; and it stands on recognising every way a
user points at a source, which new tools defeat first. Kept only for that measurement."""


def weigh(arg: Argument, origins: list[Origin], prov: Provenance) -> tuple[Evidence, ...]:
    """The evidence for and against a value that only untrusted content supplied (the module docstring)."""
    request = Request.of(prov)
    pro: list[Evidence] = []
    con: list[Evidence] = []
    speaking = next((o for o in origins if addresses_agent(o, arg, prov)), None)
    if speaking is not None:
        pro.append(Evidence("addresses_agent", f"in {_where(speaking)}"))
    pro.append(Evidence("new", "in no source the user or a trusted tool supplied"))
    requested = [o for o in origins if request.requested(o, prov)]
    unrequested = [o for o in origins if o not in requested]
    if unrequested:
        pro.append(Evidence("unrequested_source", f"{_where(unrequested[0])}"))
    if requested:
        con.append(Evidence("requested_source", f"{_where(requested[0])}"))
    same = next((why for o in origins if (why := same_object(arg, o, prov))), None)
    if same:
        con.append(Evidence("same_object", same))
    if is_code(arg.value):
        con.append(Evidence("code", f"{arg.value!r} is a short number, as a platform sends to confirm an action"))
    return (*pro, *con)


def _trusted_record(origin: Origin, prov: Provenance, spec: Spec) -> bool:
    """The record holding ``origin`` is one the spec trusts (``trusted_records``): a value field of it matches."""
    rules = spec.trusted_records.get(origin.source.removeprefix("tool:"))
    if not rules or record_of(origin.field) is None:
        return False
    for f in prov.sources.record_fields(origin):
        patterns = () if f.prose else rules.get(f.name, ())
        if any(fnmatch.fnmatchcase(f.text.casefold(), p) for p in patterns):
            return True
    return False


def _speaks_for_record(origin: Origin, arg: Argument, prov: Provenance, spec: Spec) -> bool:
    """A value field (a sender, a reply-to) of a record of a tool-level untrusted tool whose free text speaks to the
    agent: whoever wrote that text also filled the field (the sender of an injected message)."""
    tool = origin.source.removeprefix("tool:")
    if origin.prose or tool not in spec.untrusted or tool in spec.untrusted_fields or not origin.field:
        return False
    record = record_of(origin.field)
    own = origin.field[len(record) :] if record else ""
    # The record's own address (a sender, a reply-to): a scalar field, not an item of a list such as its
    # participants, and an address rather than an id.
    if not record or "[" in own or not is_destination(arg.value):
        return False
    return addresses_agent(origin, arg, prov)


def _untrusted(origin: Origin, spec: Spec) -> bool:
    tool = origin.source.removeprefix("tool:")
    if origin.source == USER or tool not in spec.untrusted:
        return False
    named = spec.untrusted_fields.get(tool)
    if named is None:
        return origin.prose
    if "*" in named or origin.field is None:
        return True
    return field_name(origin.field) in named


def _where(origin: Origin) -> str:
    kind = "text" if origin.prose else "value"
    field = f" {origin.field}" if origin.field else ""
    step = f" (step {origin.step})" if origin.step is not None else ""
    return f"{origin.source}{step}{field} [{kind}]" if origin.source != USER else USER


def parse_taint(keys: Keys) -> dict[str, Any]:
    """``untrusted`` (a list of tools, or per tool the untrusted fields), ``privileged`` and ``trusted_records``."""
    raw = keys.get("untrusted")
    fields = _untrusted_fields(raw, keys) if isinstance(raw, Mapping) else {}
    untrusted = list(fields) if isinstance(raw, Mapping) else keys.names("untrusted")
    privileged = keys.names("privileged")
    records = _trusted_records(keys.get("trusted_records", {}), keys, set(untrusted))
    return {
        "untrusted": frozenset(untrusted),
        "untrusted_fields": fields,
        "privileged": frozenset(privileged),
        "trusted_records": records,
    }


def _untrusted_fields(value: Mapping[Any, Any], keys: Keys) -> dict[str, frozenset[str]]:
    """The dict form of ``untrusted``: ``{"fetch_mail": ["body", "subject"], "fetch_page": "*"}``."""
    out = {}
    for tool, named in value.items():
        where = f"untrusted.{tool}"
        if not isinstance(tool, str) or not tool:
            keys.problem("untrusted", f"keys must be tool names (non-empty strings), got {tool!r}")
            continue
        if keys.vocab and tool not in keys.vocab:
            keys.problem(where, f"unknown tool {tool!r}{suggest(tool, keys.vocab)}")
            continue
        if named == "*":
            out[tool] = frozenset({"*"})
            continue
        if isinstance(named, str) or not isinstance(named, (list, tuple)) or not named:
            keys.problem(where, f'must be "*" or a non-empty list of field names, got {named!r}')
            continue
        bad = [i for i, f in enumerate(named) if not isinstance(f, str) or not f]
        for i in bad:
            keys.problem(f"{where}[{i}]", f"must be a field name (non-empty string), got {named[i]!r}")
        if not bad:
            out[tool] = frozenset(f.casefold() for f in named)
    return out


def _trusted_records(value: Any, keys: Keys, untrusted: set[str]) -> dict[str, dict[str, tuple[str, ...]]]:
    """``{"read_inbox": {"sender": ["no-reply@bank.example", "*@alerts.bank.example"]}}``: per untrusted tool,
    field name -> the patterns of the values that make a record trusted."""
    if not isinstance(value, Mapping):
        keys.problem("trusted_records", f"must be a dict of tool to {{field: [patterns]}}, got {value!r}")
        return {}
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for tool, rules in value.items():
        where = f"trusted_records.{tool}"
        if tool not in untrusted:
            keys.problem(
                where, f"not an untrusted tool{suggest(str(tool), untrusted)}: only its records can be trusted"
            )
            continue
        if not isinstance(rules, Mapping) or not rules:
            keys.problem(where, f"must be a non-empty dict of field name to a list of patterns, got {rules!r}")
            continue
        fields_out = {}
        for name, patterns in rules.items():
            at = f"{where}.{name}"
            if not isinstance(name, str) or not name:
                keys.problem(where, f"keys must be field names (non-empty strings), got {name!r}")
            elif isinstance(patterns, str) or not isinstance(patterns, (list, tuple)) or not patterns:
                keys.problem(at, f"must be a non-empty list of patterns, got {patterns!r}")
            elif any(not isinstance(p, str) or not p.strip("*?") for p in patterns):
                bad = next(p for p in patterns if not isinstance(p, str) or not p.strip("*?"))
                keys.problem(at, f"a pattern must name something besides * and ?, got {bad!r}")
            else:
                fields_out[name.casefold()] = tuple(p.casefold() for p in patterns)
        if fields_out:
            out[tool] = fields_out
    return out
