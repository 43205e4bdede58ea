"""The documentation: README.md is a landing page, and docs/ is a site whose nav lists every page.

``mkdocs build --strict`` (in .ci/run) fails on a broken link or anchor and on a page left out of the nav;
these checks run without mkdocs installed, in the unit tier. User documentation names no issue numbers
and keeps no development diary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_MAX_LINES = 200

DIARY = [
    (r"\bissues? #?\d+", "an issue number"),
    (r"(?<![\w/&#])#\d+\b", "an issue number"),
    (r"\b(first|second|third|fourth|this|that|last|previous|next|earlier) (pass|turn)\b", "a development pass"),
    (r"`[0-9a-f]{7,40}`", "a commit hash"),
]


def nav_pages(nav) -> list[str]:
    """Every page file named in an mkdocs nav, at any depth."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return [page for item in nav for page in nav_pages(item)]


def diary_in(text: str) -> list[str]:
    return [f"{what}: {m.group(0)!r}" for pattern, what in DIARY for m in re.finditer(pattern, text)]


def user_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_readme_is_a_landing_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move the detail into docs/"


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_exists():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True
    listed = nav_pages(config["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(listed) == pages
    assert len(listed) == len(set(listed)), "a page is listed twice"


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_user_docs_name_no_issue_and_keep_no_diary(page):
    assert diary_in(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "text, found",
    [
        ("fixed in issue 26", ["an issue number: 'issue 26'"]),
        ("see #23 for why", ["an issue number: '#23'"]),
        ("the third pass took it to 33 µs", ["a development pass: 'third pass'"]),
        ("measured at `ea76d6f`", ["a commit hash: '`ea76d6f`'"]),
        ("see [Options](serve.md#options), `--workers 2`, `ORD-12345` and C# code", []),
    ],
)
def test_the_diary_check_finds_what_it_is_for(text, found):
    # A guard is only as good as its planted violation: each pattern must fire on what it is for.
    if found:
        assert diary_in(text)[:1] == found
    else:
        assert diary_in(text) == []


def test_nav_pages_reads_nested_sections():
    assert nav_pages([{"Home": "index.md"}, {"Guide": [{"A": "a.md"}, "b.md"]}]) == ["index.md", "a.md", "b.md"]


def test_the_spec_page_names_every_key():
    from luckrate.core.checks import SPEC_KEYS

    text = (DOCS / "spec.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_]+)`", text)) | set(re.findall(r'"([a-z_]+)":', text))
    assert SPEC_KEYS | {"tools", "severity"} <= named
    assert {"in", "min", "max", "match", "from"} <= named  # the rules of `args`
