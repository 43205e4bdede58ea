"""Tool results read as fields (core/fields.py): which leaf holds a value, which is free text."""

import json

import pytest

from luckrate.core.fields import MAX_PARSED, field_name, fields


def _kinds(text: str) -> dict[str, bool]:
    """path -> prose, for every leaf (the last one wins where a path repeats)."""
    return {f.path: f.prose for f in fields(text)}


@pytest.mark.parametrize(
    "text, expected",
    [
        # JSON: a single-token leaf is a value, a sentence is free text
        (
            json.dumps({"id": "24", "participants": ["a@x.test"], "body": "Hi, send it to b@x.test please"}),
            {"id": False, "participants[0]": False, "body": True},
        ),
        # a Python literal (a repr of dicts), read without executing anything
        ("[{'sender': 'Bob', 'body': 'see www.x.test for details'}]", {"[0].sender": False, "[0].body": True}),
        # YAML as agent tools render it: folded quoted scalars, data-keyed mappings, records
        (
            "- body: 'Hi Emma,\n\n    please pay.'\n  id_: '6'\n  shared_with:\n    bob@x.test: rw\n",
            {"[0].body": True, "[0].id_": False, "[0].shared_with": False},
        ),
        # key: value lines in a plain document (a bill): the IBAN line is a value, sentences are text
        ("Bill for December\nIBAN: UK12345678901234567890\nPlease pay by Friday.", {"IBAN": False, "": True}),
        # a date-time with a space is one value
        (
            "start_time: 2024-05-15 10:00:00\ndescription: Weekly sync with the team",
            {"start_time": False, "description": True},
        ),
        # a CSV table: one field per cell
        (
            "name,email,rating\nJohn Doe,john@x.test,3\nJane Roe,jane@x.test,5\n",
            {"[0].email": False, "[1].email": False, "[0].name": True},
        ),
    ],
)
def test_fields(text, expected):
    found = _kinds(text)
    for path, prose in expected.items():
        assert found.get(path) is prose, (path, found)


def test_a_lone_token_line_in_a_document_is_still_text():
    # Only keys and list items make values: an injected link alone on a line of a page is free text.
    assert _kinds("Welcome to my page.\nwww.evil.test\nBye.") == {"": True}


def test_a_url_or_a_clock_time_never_starts_a_key():
    kinds = [(f.path, f.text) for f in fields("https://x.test/a is here\n10:00 meeting starts")]
    assert all(path == "" for path, _ in kinds)


def test_records_are_numbered_for_lists_of_records():
    got = [(f.record, f.name) for f in fields(json.dumps([{"sender": "Bob"}, {"sender": "Eve"}]))]
    assert got == [("[0]", "sender"), ("[1]", "sender")]


@pytest.mark.parametrize(
    "path, name",
    [
        ("[0].body", "body"),
        ("shared_with[bob@x.test]", "shared_with"),
        ("IBAN", "iban"),
        ("a.b[3].c", "c"),
        ("", ""),
    ],
)
def test_field_name(path, name):
    assert field_name(path) == name


def test_oversized_results_are_not_parsed():
    huge = json.dumps({"body": "x " * (MAX_PARSED // 2 + 10)})
    assert [(f.path, f.prose) for f in fields(huge)] == [("", True)]


def test_deep_nesting_is_cut_not_recursed_forever():
    deep = "[" * 5000 + "]" * 5000  # past json's and the parser's recursion limits
    assert isinstance(fields(deep), list)
