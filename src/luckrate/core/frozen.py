"""A faster ``__init__`` for the frozen dataclasses built on the grading path.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__`` (Python 3.11):
1.3-1.5 µs for a step or a tool call, and a 9-span trace built about 25 of them, a fifth of adapting it
(benchmarks/README.md). ``fast_init`` replaces it with one that writes the fields into the
instance's ``__dict__``, which is what ``object.__setattr__`` ends up doing: the object is the same
(``fields``, ``replace``, equality, hashing, repr and ``FrozenInstanceError`` on assignment are
untouched), built in about 0.6 µs. tests/core/test_frozen.py compares the two ``__init__`` s.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

_FACTORY = object()


def fast_init(cls: T) -> T:
    """Class decorator, applied above ``@dataclass(frozen=True)``: plain fields only (no ``__post_init__``,
    keyword-only or ``init=False`` fields, no slots), checked here rather than silently mishandled."""
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast_init takes dataclasses without __post_init__ or slots")
    params, lines, env = [], [], {"_FACTORY": _FACTORY}
    for f in fields(cls):
        if not f.init or f.kw_only or f.name.startswith("__"):
            raise TypeError(f"{cls.__name__}.{f.name}: fast_init takes positional init fields only")
        if f.default is not MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            lines.append(f"    if {f.name} is _FACTORY: {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
    lines.append("    __fields__ = self.__dict__")  # a name no field can have: it would shadow the field
    lines += [f"    __fields__[{f.name!r}] = {f.name}" for f in fields(cls)]
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines) + "\n"
    namespace: dict[str, Any] = {}
    exec(source, env, namespace)  # noqa: S102 - our own field names, as dataclasses itself does
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__dict__["__init__"].__doc__
    setattr(cls, "__init__", init)  # noqa: B010 - mypy will not let a class's __init__ be assigned
    return cls
