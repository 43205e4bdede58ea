"""What the receiver fuzz tests (traces and logs) throw: protobuf fields written by hand, mutations of a
valid body, and Hypothesis strategies for the values an OTLP/JSON document may hold."""

from __future__ import annotations

import random

from hypothesis import strategies as st


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def mutations(body: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    """(how, body) pairs: ``body`` truncated, with bytes flipped, spliced, and random bytes instead."""
    flipped = bytearray(body)
    for _ in range(rng.randint(1, 10)):
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    return [
        ("truncated", body[: rng.randrange(1, len(body))]),
        ("bit flips", bytes(flipped)),
        ("random bytes", rng.randbytes(rng.randint(1, 2048))),
        ("spliced", body[len(body) // 2 :] + body[: len(body) // 2]),
    ]


HEX = st.sampled_from(["", "zz", "0" * 32, "0" * 16, "f" * 31, "g" * 32, "AbCd" * 8, "01" * 8]) | st.binary(
    min_size=0, max_size=20
).map(bytes.hex)
"""Ids as OTLP/JSON might carry them: empty, too short or long, not hex, mixed case."""
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(["\ud800", "1e999", "-1", "18446744073709551616"])
)
"""Any JSON scalar, including the ones a strict decoder chokes on (lone surrogates, huge ints)."""
ANY_VALUE = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "stringValue": SCALARS,
            "intValue": SCALARS,
            "boolValue": SCALARS,
            "doubleValue": SCALARS,
            "bytesValue": SCALARS,
        },
    ),
    lambda inner: (
        st.fixed_dictionaries({"arrayValue": st.fixed_dictionaries({"values": st.lists(inner, max_size=3)})})
        | st.fixed_dictionaries(
            {
                "kvlistValue": st.fixed_dictionaries(
                    {
                        "values": st.lists(
                            st.fixed_dictionaries({"key": st.text(max_size=10), "value": inner}), max_size=3
                        )
                    }
                )
            }
        )
    ),
    max_leaves=10,
)
"""An AnyValue, of any of its kinds, nested."""
