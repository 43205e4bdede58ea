"""SourceIndex's two lookup modes (scanning the sources' text, and the token index) give one answer."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from luckrate.core import identifiers
from luckrate.core import sources as source_index
from luckrate.core.identifiers import searchable, tokens
from luckrate.core.sources import SourceIndex

# Letters (a capital: a sentence glued to the next, ".Ta", is cut too), identifier marks, every token and
# part cut, Unicode whitespace (\x1c and \x85 are spaces to str.split), and characters whose case-folding
# changes their length.
_ALPHABET = "abT19-_.:/@ ,;\"'`()[]{}<>|\\\n\t?!=&#*" + "\u00e9\u2003\u00df\u0130\x1c\x85"
texts = st.text(alphabet=_ALPHABET, max_size=60)


def _keys(text: str, extra: list[str]) -> list[str]:
    """The text's own tokens, every substring of its folded form up to 8 long, and unrelated keys."""
    folded = text.casefold()
    subs = {folded[i:j] for i in range(len(folded)) for j in range(i + 1, min(len(folded), i + 8) + 1)}
    return sorted(tokens(text) | subs | set(extra))


@settings(max_examples=300, deadline=None)
@given(text=texts, extra=st.lists(texts, max_size=3))
def test_holds_is_membership_in_tokens(text, extra):
    folded, toks = searchable(text).casefold(), tokens(text)
    for key in _keys(text, extra):
        if key:
            scanned = identifiers.CUT_OR_SPACE.search(key) is None and identifiers.holds(folded, key)
            assert scanned == (key in toks), key


@settings(max_examples=200, deadline=None)
@given(text=texts)
def test_a_token_longer_than_the_window_is_cut_whole(text):
    # A window of 3 characters sends most hits to the fallback (cutting the whole text): same answer.
    saved = identifiers.TOKEN_WINDOW
    identifiers.TOKEN_WINDOW = 3
    try:
        folded, toks = searchable(text).casefold(), tokens(text)
        for key in _keys(text, []):
            if key and identifiers.CUT_OR_SPACE.search(key) is None:
                assert identifiers.holds(folded, key) == (key in toks), key
    finally:
        identifiers.TOKEN_WINDOW = saved


def _index(sources: list[str], scan: bool) -> SourceIndex:
    index = SourceIndex()
    index.add("user", sources[0])
    for i, text in enumerate(sources[1:]):
        index.add(f"tool:t{i}", text, i)
    # Scanning with a budget that never runs out, or past the budget from the start (the token index).
    index._scanned = -(10**9) if scan else 1 + source_index.SCAN_FACTOR * index._chars
    return index


@settings(max_examples=150, deadline=None)
@given(sources=st.lists(texts, min_size=1, max_size=5))
def test_scanning_and_the_token_index_agree(sources):
    keys = sorted(set().union(*(tokens(t) for t in sources)) | {"a1", "9", "x-1"})
    scanning, indexed = _index(sources, True), _index(sources, False)
    for key in keys:
        assert list(scanning.tokens_of(key)) == list(indexed.tokens_of(key)), key
    assert scanning._tokens is None and indexed._tokens is not None


@settings(max_examples=150, deadline=None)
@given(sources=st.lists(texts, min_size=1, max_size=5), before=st.integers(0, 6))
def test_a_lookup_below_a_position_is_the_whole_lookup_cut_there(sources, before):
    # Scanning only the sources below ``before`` (a link followed back from a later source) must find what the
    # whole lookup finds there, whichever of the keys was looked up whole first.
    keys = sorted(set().union(*(tokens(t) for t in sources)) | {"a1", "9"})
    for scan in (True, False):
        cut, whole = _index(sources, scan), _index(sources, scan)
        for key in keys:
            expected = [p for p in whole.tokens_of(key) if p < before]
            assert list(cut.tokens_of(key, before)) == expected, (key, scan)
            assert list(cut.tokens_of(key)) == list(whole.tokens_of(key)), (key, scan)


def test_lookups_past_the_budget_switch_to_the_index_for_good():
    index = SourceIndex()
    index.add("user", "order ORD-1")
    for i in range(10):
        index.add("tool:lookup", f'{{"id": "ORD-{i}", "note": "{"word " * 20}"}}', i)
    assert index.tokens_of("ord-3") == [4] and index._tokens is None
    for i in range(100):  # each new key scans every source: the budget runs out
        index.tokens_of(f"key-{i}")
    assert list(index.tokens_of("ord-3")) == [4]
    assert index._tokens is not None
    index.add("tool:lookup", '{"id": "ORD-3"}', 10)  # later sources join the index, not a scan
    assert list(index.tokens_of("ord-3")) == [4, 11]


def test_a_key_scanned_before_later_sources_arrive_finds_them_too():
    index = SourceIndex()
    index.add("user", "refund ORD-7")
    assert index.tokens_of("ord-7") == [0]
    index.add("tool:lookup", "ORD-7, shipped", 0)
    index.add("tool:lookup", "xORD-7 is no match", 1)
    assert index.tokens_of("ord-7") == [0, 1]


@pytest.mark.parametrize(
    "text, key, held",
    [
        ('{"order_id": "ORD-12"}', "ord-12", True),
        ("see https://x.test/a.", "https://x.test/a", True),
        ("mailto:bob@x.test", "bob@x.test", True),
        ("ORD-123", "ord-12", False),  # a prefix of a token is not the token
        ("refund", "refund", False),  # letters only are never indexed
        ("refund.", "refund", True),  # ... but a token with its sentence mark stripped is
        ("see www.x.com.Then call", "www.x.com", True),  # a sentence glued to the next
        ("see www.x.com.Then call", "www.x.com.then", True),  # ... and the token as written
        ("see www.x.com.then call", "www.x.com", False),  # no capital: one token
    ],
)
def test_holds_examples(text, key, held):
    assert identifiers.holds(searchable(text).casefold(), key) is held
    assert (key in tokens(text)) is held


@settings(max_examples=150, deadline=None)
@given(args=st.lists(texts, min_size=1, max_size=3), extra=st.lists(texts, max_size=3))
def test_an_echo_is_a_token_of_the_call_s_text_arguments(args, extra):
    # The echo check searches the call's text arguments for each key instead of cutting them into tokens: the
    # same answer as membership in the tokens of those arguments (the ones with a space, as before).
    index = SourceIndex()
    index.add("user", "")
    index.add("tool:t", "result", 0, {f"a{i}": a for i, a in enumerate(args)})
    spaced = [a for a in args if " " in a]
    toks = tokens("\n".join(spaced)) if spaced else set()
    for key in _keys("\n".join(args), extra):
        if key:
            assert index.called_text_holds(1, (key,)) == (key in toks), key


@settings(max_examples=150, deadline=None)
@given(sources=st.lists(texts, min_size=1, max_size=4))
def test_a_source_s_folded_text_is_its_text_case_folded(sources):
    # While scanning, folded() hands out the scanned copy when it is the text folded (no unglued spelling after it).
    for scan in (True, False):
        index = _index(sources, scan)
        index.tokens_of("a1")  # scans, or builds the token index
        for position, text in enumerate(sources):
            assert index.folded(position) == text.casefold(), (position, scan)
