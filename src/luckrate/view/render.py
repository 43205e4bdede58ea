"""The viewer's pages and the HTML report, from Jinja2 templates with autoescaping on for every value.

Span content is attacker-controlled. Every ``{{ value }}`` goes through ``visible`` (control and bidi
characters shown as ``<U+202E>``, so text cannot reorder what is around it) and then Jinja2's escaping:
it is text, never markup. No value from span data goes into a URL, an attribute that loads anything, or
a template (the templates are files in this package; data is only ever a variable).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

_HERE = resources.files(__package__)
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The served pages' Content-Security-Policy: our own script and stylesheet files, nothing inline, nothing
from elsewhere."""


def visible(value: Any) -> Any:
    """Control, zero-width and bidi characters as ``<U+XXXX>`` (the JS does the same)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", value)
    return "" if value is None else value


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _when(epoch: float | None) -> str:
    if not epoch:
        return ""
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(_HERE / "templates")),
        autoescape=True,
        finalize=visible,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(seconds=_seconds, when=_when)
    return env


_ENV = _environment()


def static(name: str) -> bytes:
    """A file of ``static/`` (the page's script and stylesheet)."""
    return (_HERE / "static" / name).read_bytes()


def runs_page(rows: Sequence[Mapping], summary: Mapping, filters: Mapping[str, str], choices: Mapping, **page) -> str:
    return _ENV.get_template("runs.html").render(
        rows=rows, summary=summary, filters=filters, choices=choices, report=False, **page
    )


def run_page(run: Mapping, **page) -> str:
    return _ENV.get_template("run.html").render(run=run, report=False, **page)


def not_found_page(trace_id: str) -> str:
    return _ENV.get_template("missing.html").render(trace_id=trace_id, report=False)


def report(runs: Sequence[Mapping], summary: Mapping, luck: str, gate: Sequence[str]) -> str:
    """One self-contained HTML file: the stylesheet inline under a CSP that allows exactly it (its hash), no
    script, nothing fetched."""
    css = static("viewer.css").decode()
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    csp = f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    return _ENV.get_template("report.html").render(
        runs=runs, summary=summary, luck=luck, gate=gate, css=Markup(css), csp=csp, report=True, trace_url=None
    )
