"""fast_init builds the same frozen dataclass the generated __init__ builds."""

import dataclasses
from dataclasses import dataclass, field

import pytest

from luckrate.core.frozen import fast_init
from luckrate.core.step import Step


@dataclass(frozen=True)
class Plain:
    a: int
    b: str = "x"
    c: list = field(default_factory=list)
    d: int = field(default=-1, compare=False)


@fast_init
@dataclass(frozen=True)
class Fast:
    a: int
    b: str = "x"
    c: list = field(default_factory=list)
    d: int = field(default=-1, compare=False)


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((1, "y"), {}), ((), {"a": 2, "c": [1]}), ((3, "z", [2], 9), {})])
def test_same_fields_defaults_and_factories(args, kwargs):
    plain, fast = Plain(*args, **kwargs), Fast(*args, **kwargs)
    assert dataclasses.astuple(plain) == dataclasses.astuple(fast)
    assert fast == Fast(*args, **kwargs) and fast != Fast(99)
    assert repr(fast).replace("Fast", "Plain") == repr(plain)


def test_a_factory_default_is_fresh_each_time_and_replace_works():
    one, two = Fast(1), Fast(1)
    assert one.c == [] and one.c is not two.c
    assert dataclasses.replace(one, b="q") == Fast(1, "q")


def test_still_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Fast(1).a = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        Step(0, "t").tool = "u"


def test_arity_errors_are_the_usual_ones():
    with pytest.raises(TypeError):
        Fast()
    with pytest.raises(TypeError):
        Fast(1, "x", [], 0, "extra")
    with pytest.raises(TypeError):
        Fast(1, e=2)


def test_refuses_what_it_would_mishandle():
    @dataclass(frozen=True)
    class Checked:
        a: int

        def __post_init__(self):
            pass

    with pytest.raises(TypeError, match="__post_init__"):
        fast_init(Checked)

    @dataclass(frozen=True)
    class KwOnly:
        a: int = field(kw_only=True)

    with pytest.raises(TypeError, match="positional"):
        fast_init(KwOnly)
