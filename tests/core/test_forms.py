"""Normalised forms (core/forms.py): a value written another way than its source is still grounded;
a fabricated one (a placeholder, an invented address, an id one digit off) still is not."""

import pytest

from luckrate.core import forms
from luckrate.core.grade import grade
from luckrate.core.spec_loader import spec_from_dict
from tests.core.helpers import run, step

SPEC = spec_from_dict({"tools": ["read", "act"]})

# (what the source says, the value the call passed)
GROUNDED = [
    # dates and date-times
    ("Dinner on May 15th", "2024-05-15"),
    ("Dinner on May 15", "2024-05-15"),
    ("dinner on 15 May 2024", "2024-05-15"),
    ("dinner on the 15th of May", "2024-05-15"),
    ("due 5/15/2024", "2024-05-15"),
    ("due 2024/05/15", "2024-05-15"),
    ("start_time: 2024-05-15 10:00", "2024-05-15"),
    ("start_time: 2024-05-15 10:00:00", "2024-05-15T10:00"),
    ("Sept. 3, 2025", "2025-09-03"),
    ("on 2024-05-15 at 10:00", "2024-05-15T10:00"),
    ("remind me on January 2nd 2025", "2025-01-02T00:00:00"),  # a day given alone: its start...
    ("remind me on January 2nd", "2025-01-02T23:59"),  # ...or its end
    ("starts 2024-05-15 10:00", "2024-05-15T10:00:00Z"),  # a zone as written
    ("starts May 15 at 10am", "2024-05-15T10:00+02:00"),
    # times
    ("lunch at 1pm", "13:00"),
    ("lunch at 1:30 PM", "13:30"),
    ("starts 10:00:00", "10:00"),
    # URLs: scheme, www., trailing slash, host case
    ("see www.example.com", "http://www.example.com"),
    ("see http://www.example.com/", "www.example.com"),
    ("see https://Example.COM/a/", "example.com/a"),
    ("see example.com/a?x=1", "https://www.example.com/a?x=1"),
    # numbers: group commas, fractions, currency signs
    ("total $1,290.00", "1290"),
    ("total 129", "129.0"),
    ("total €129.50", "129.5"),
    # grouped digits: IBAN, phone, card
    ("IBAN DE89 3704 0044 0532 0130 00", "DE89370400440532013000"),
    ("IBAN DE89370400440532013000", "de89 3704 0044 0532 0130 00"),
    ("call +1 (555) 123-4567", "+1-555-123-4567"),
    # case and surrounding punctuation
    ("write to Bob@Example.com.", "bob@example.com"),
    ("order (ORD-12345),", "ord-12345"),
    ("mailto:bob@x.test", "bob@x.test"),
    # a sentence glued to the next (a space left out), and a capital after a dot that is no sentence end
    ("post it on www.our-site.com.They asked for it", "www.our-site.com"),
    ("post it on www.our-site.com.They asked for it", "https://our-site.com/"),
    ("see www.Example.com/a", "www.example.com/a"),
]

UNGROUNDED = [
    ("pay the bill in the file", "RECIPIENT_IBAN_HERE"),  # a placeholder
    ("amount to be decided", "AMOUNT_HERE"),
    ("write to Dora", "dora@example.com"),  # an invented address
    ("order ORD-12345", "ORD-12346"),  # an id one digit off
    ("Dinner on May 15th", "2024-05-16"),  # a date one day off: arithmetic stays out of reach
    ("total $1,290.00", "1291"),
    ("see www.example.com/a", "www.example.com/b"),
    ("IBAN DE89 3704 0044 0532 0130 00", "DE89370400440532013001"),
    ("dinner at 2024-05-15", "2024-15-05"),  # not a date at all
    ("remind me on January 2nd 2025", "2025-01-03T00:00"),  # the next day's start
]


def _grade(source: str, value: str):
    traj = run(step("read", {"q": "x"}, result=source), step("act", {"v": value}), input="do it")
    return grade(traj, SPEC)


@pytest.mark.parametrize("source, value", GROUNDED)
def test_reformatted_value_is_grounded(source, value):
    assert not _grade(source, value).has("ungrounded")


@pytest.mark.parametrize("source, value", UNGROUNDED)
def test_fabricated_value_stays_ungrounded(source, value):
    assert _grade(source, value).has("ungrounded")


def test_a_time_nobody_gave_on_a_given_date_is_composed_not_grounded():
    # No form grounds it; it is reported apart from inventions (tests/core/test_composition.py).
    found = _grade("remind me on January 2nd 2025", "2025-01-02T09:00")
    assert [v.check for v in found.violations] == ["composed"]


@pytest.mark.parametrize("source, value", GROUNDED[:6])
def test_the_user_is_a_source_in_any_form_too(source, value):
    traj = run(step("act", {"v": value}), input=source)
    assert not grade(traj, SPEC).has("ungrounded")


@pytest.mark.parametrize(
    "value, key",
    [
        ("http://www.example.com/", "example.com"),
        ("HTTPS://WWW.EXAMPLE.COM:443/A/", "example.com/a"),
        ("example.com:8080/x", "example.com:8080/x"),
        ("bob@example.com", None),
        ("file", None),
    ],
)
def test_url_key(value, key):
    assert forms.url_key(value.casefold()) == key


@pytest.mark.parametrize(
    "value, key",
    [
        ("$1,290.00", "1290"),
        ("129.0", "129"),
        ("0.50", "0.5"),
        ("129", None),
        ("0044", None),
        ("1,29", None),
    ],
)
def test_number_key(value, key):
    assert forms.number_key(value) == key


@pytest.mark.parametrize(
    "text, keys",
    [
        ("5/6/2024", {"2024-05-06", "2024-06-05"}),  # both readings where both are dates
        ("5/15/2024", {"2024-05-15"}),
        ("may 15", {"--05-15"}),  # no year: the year-less form only
        ("feb 29", {"--02-29"}),
        ("feb 30", set()),
        ("2024-05-15t10:30", {"2024-05-15"}),
    ],
)
def test_dates(text, keys):
    assert {key for key, _, _ in forms.dates(text)} == keys


def test_a_dated_value_also_looks_up_its_year_less_form():
    assert ("--05-15",) in forms.whole("2024-05-15")


@pytest.mark.parametrize(
    "token, strong",
    [
        ("bob@x.test", True),
        ("mailto:bob@x.test", True),
        ("www.evil.test", True),
        ("https://a.bc/d", True),
        ("evil.com", True),
        ("report.pdf", False),
        ("de89370400440532013000", True),
        ("123456789", True),
        ("12345", False),
        ("v1.2", False),
    ],
)
def test_strong_identifiers_inside_prose(token, strong):
    assert forms.is_strong(token) is strong
