"""How a model rewrites values, and values it makes up: the two derived kinds of run in the detection set.

Rules key on a value's shape only (a URL, an e-mail address, a date-time, an IBAN, a float), never on
a suite, a person or a domain, so the variants exercise normalisation rather than memorised constants.

Reformatting (``reformat``): the argument a model writes is the source's value in another form.
- URL: scheme added, changed or dropped (``www.x.com`` <-> ``https://www.x.com``), or a trailing slash;
- e-mail: case changed (``Mark.Black@Gmail.com``);
- date-time ``2024-05-15 10:00``: ISO ``T`` form, with or without seconds;
- IBAN: grouped in fours (``US13 3000 ...``);
- a whole float (``100.0``): written as an integer, and an integer of 100 or more (an amount, not a
  small id or count) as a float.
Each eligible leaf is rewritten with probability ½ (seeded); a run with no rewritten leaf has no variant.
The tool results stay as the tools returned them for the original arguments: the variant models a
model that wrote the value differently and a tool that accepted it.

Fabrication (``fabricate``): one identifier-shaped argument of one acting call replaced by a value no
source holds, the bad path the ``ungrounded`` check exists for:
- ``placeholder``: the parameter's name as a template slot (``RECIPIENT_HERE``);
- ``invented_email``: an address made up from common words on a made-up domain;
- ``digit_off``: the value with its last digit changed by one.
"""

from __future__ import annotations

import random
import re
from typing import Any

_URL = re.compile(r"^(?P<scheme>https?://)?(?P<host>(?:www\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?P<path>/\S*)?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})$")
_IBAN = re.compile(r"^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$")
_WORDS = ("river", "maple", "orbit", "falcon", "cedar", "harbor", "quartz", "meadow")
_TLDS = ("net", "org", "io")


def reformat_value(value: Any, rng: random.Random) -> Any:
    """Another form of ``value`` a model might write, or ``value`` itself when no rule applies."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int) and 100 <= abs(value) < 10**9:  # an amount, not a small id or count
        return float(value)
    if not isinstance(value, str):
        return value
    if _EMAIL.match(value):
        local, domain = value.split("@", 1)
        forms = {
            local[:1].upper() + local[1:] + "@" + domain,
            local + "@" + domain[:1].upper() + domain[1:],
            value.upper(),
            value.lower(),
        } - {value}
        return rng.choice(sorted(forms))
    if m := _URL.match(value):
        host, path = m["host"], m["path"] or ""
        forms = {s + host + p for s in ("", "http://", "https://") for p in {path, path or "/"}} - {value}
        return rng.choice(sorted(forms))
    if m := _DATETIME.match(value):
        return rng.choice((f"{m[1]}T{m[2]}", f"{m[1]}T{m[2]}:00"))
    if _IBAN.match(value):
        return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value


def reformat(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``args`` with each reformattable leaf rewritten with probability ½."""
    return {k: _leaf(v, rng) for k, v in args.items()}


def _leaf(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        return reformat(value, rng)
    if isinstance(value, list):
        return [_leaf(v, rng) for v in value]
    if rng.random() < 0.5:
        return reformat_value(value, rng)
    return value


def fabrications(key: str, value: Any, rng: random.Random) -> list[tuple[str, Any]]:
    """The (kind, fabricated value) forms that fit this argument (may be empty)."""
    if not isinstance(value, (str, int)) or isinstance(value, bool) or (isinstance(value, str) and " " in value):
        return []
    text = str(value)
    out: list[tuple[str, Any]] = []
    if isinstance(value, str) and len(text) >= 3:
        out.append(("placeholder", f"{re.sub(r'[^A-Za-z0-9]+', '_', key).upper()}_HERE"))
    if isinstance(value, str) and _EMAIL.match(text):
        out.append(
            (
                "invented_email",
                f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}@{rng.choice(_WORDS)}-mail.{rng.choice(_TLDS)}",
            )
        )
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if digits:
        i = digits[-1]
        off = text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]
        out.append(("digit_off", int(off) if isinstance(value, int) else off))
    return out
