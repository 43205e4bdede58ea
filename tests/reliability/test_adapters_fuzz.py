"""Every adapter, fed malformed, truncated, random and adversarial input, answers with trajectories or an
InvalidInput naming what is wrong — never another exception (a traceback in the CLI, a grade error in
the service).

Seeds are the committed captures in tests/testdata (real framework output) and examples/runs.jsonl; the
fuzzer mutates their bytes (truncation, flips, splices) and their JSON structure (a node replaced by an
adversarial value: deep nesting, huge strings, lone surrogates, NaN/Infinity, wrong types).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from luckrate.adapters import InvalidInput
from luckrate.adapters.formats import reader
from luckrate.adapters.otlp import read_otlp, read_otlp_files, read_otlp_json
from luckrate.adapters.trajectory import trajectory_to_dict
from luckrate.core.step import Trajectory
from tests.reliability.harness import report

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "testdata"

NO_RUN = {DATA / "mcp" / "initialized.sdk.mcp.otlp"}
"""Captures holding only a trace that is no run (read beside a run's files, never alone)."""

SOURCES = {
    # name: (reader(bytes, source) -> list[Trajectory], seed files)
    "trajectory": (reader("trajectory"), [ROOT / "examples" / "runs.jsonl"]),
    "langgraph": (reader("langgraph"), sorted(p for p in (DATA / "langgraph").glob("*.json") if ".otlp" not in p.name)),
    "crewai": (reader("crewai"), sorted((DATA / "crewai").glob("*.json"))),
    "n8n": (
        lambda data, source: _n8n(data, source),
        sorted(p for p in (DATA / "n8n").glob("*.json") if p.name != "manifest.json"),
    ),
    "otlp": (
        lambda data, source: read_otlp(data, source),
        # Not the MCP server's notification trace: a file with no run is refused on its own, by design.
        sorted(p for p in DATA.glob("*/*.otlp") if not p.name.endswith(".logs.otlp") and p not in NO_RUN),
    ),
    # A logs file is read beside the trace file its records belong to (the seed's pair).
    "otlp-logs": (
        lambda data, source: read_otlp_files([(LOGS_PAIR.read_bytes(), LOGS_PAIR.name)], [(data, source)]),
        [DATA / "openai-v2" / "forbidden.legacy.openai-v2.logs.otlp"],
    ),
    "otlp-json": (lambda data, source: read_otlp_json(data, source), sorted(DATA.glob("*/*.otlp.json"))),
}
NAMES = sorted(SOURCES)
LOGS_PAIR = DATA / "openai-v2" / "forbidden.legacy.openai-v2.traces.otlp"


def _n8n(data: bytes, source: str):
    from luckrate.adapters.n8n import read_file  # landed after the others; not yet in adapters.formats

    return read_file(data, source)


TRIED: Counter = Counter()

ADVERSARIAL = [
    "null",
    "true",
    "0",
    "-1",
    str(2**63),
    str(-(2**70)),
    "1e308",
    "1e999",
    "NaN",
    "-Infinity",
    '""',
    '"' + "x" * 1_000_000 + '"',
    '"\\ud800"',
    '"\\u0000"',
    '"' + "é" * 1000 + '"',
    "[]",
    "{}",
    "[[[[[]]]]]",
    '{"": {"": {"": null}}}',
    '"' + "[" * 5000 + '"',
    '"' + "0" * 33 + '"',
    '"' + "zz" * 16 + '"',
    "\"{'a': (1,)}\"",
    "\"__import__('os').system('false')\"",
    "1" + "0" * 5000,
]
"""JSON texts put in place of any node of a seed's JSON."""
MARKER = "\u2063luckrate-fuzz\u2063"


def _deep(depth: int) -> str:
    return "[" * depth + '"leaf"' + "]" * depth


def _outcome(name: str, data: bytes) -> str:
    read = SOURCES[name][0]
    try:
        runs = read(data, "fuzz")
    except InvalidInput as e:
        assert str(e).strip(), "an InvalidInput must say what is wrong"
        TRIED[(name, "invalid")] += 1
        return "invalid"
    assert isinstance(runs, list) and all(isinstance(t, Trajectory) for t in runs)
    for t in runs:
        json.dumps(trajectory_to_dict(t), allow_nan=True)  # what was built stays serializable
    TRIED[(name, "read")] += 1
    return "read"


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    op = rng.randrange(4)
    if op == 0:
        return data[: rng.randrange(len(data) + 1)]
    buf = bytearray(data)
    if op == 1:
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf)
    if op == 2:
        at = rng.randrange(len(buf) + 1)
        return bytes(buf[:at] + rng.randbytes(rng.randint(1, 64)) + buf[at:])
    a, b = sorted(rng.randrange(len(buf) + 1) for _ in range(2))
    return bytes(buf[:a] + buf[b:] + buf[a:b])


def _nodes(doc, path=()):
    yield path
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from _nodes(v, path + (k,))


def _replace(doc, path, value):
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return doc


def _mutate_json(text: str, rng: random.Random, value: str) -> bytes:
    """Replace one node of each JSON document (a file, or each JSON line) by the JSON text ``value``."""
    try:
        docs = [json.loads(text)]
        lines = False
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
        lines = True
    out = []
    for doc in docs:
        path = rng.choice(list(_nodes(doc)))
        out.append(json.dumps(_replace(doc, path, MARKER)).replace(json.dumps(MARKER), value))
    return ("\n".join(out) if lines else out[0]).encode()


@pytest.mark.parametrize("name", NAMES)
def test_every_seed_reads(name):
    """The seeds are valid input: a mutation that fails is the mutation's doing."""
    read, seeds = SOURCES[name]
    assert seeds, f"no seed files for {name}"
    for path in seeds:
        assert read(path.read_bytes(), path.name)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), rounds=st.integers(1, 4))
def test_mutated_bytes_read_or_raise_invalid_input(name, seed, rounds):
    rng = random.Random(seed)
    data = rng.choice(SOURCES[name][1]).read_bytes()
    for _ in range(rounds):
        data = _mutate_bytes(data, rng) if data else data
    _outcome(name, data)


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("otlp", "otlp-logs")])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32),
    value=st.sampled_from(ADVERSARIAL)
    | st.builds(_deep, st.integers(50, 600))
    | st.builds(_deep, st.integers(5_000, 100_000)),
)
def test_adversarial_json_nodes_read_or_raise_invalid_input(name, seed, value):
    rng = random.Random(seed)
    text = rng.choice(SOURCES[name][1]).read_text(encoding="utf-8")
    _outcome(name, _mutate_json(text, rng, value))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=512))
def test_random_bytes_read_or_raise_invalid_input(name, data):
    _outcome(name, data)


# Inputs a person or attacker would try by hand, for every adapter.
HANDPICKED = [
    ("empty", b""),
    ("whitespace", b" \n\t\n"),
    ("not utf-8", b"\xff\xfe\x00garbage\x80"),
    ("utf-16 bom", "[]".encode("utf-16")),
    ("deep list", b"[" * 100_000 + b"]" * 100_000),
    ("deep object", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
    ("deep json line", b'{"id":"x"}\n' + b"[" * 100_000 + b"]" * 100_000),
    ("nan", b"NaN"),
    ("huge number", b"1" + b"0" * 5000),
    ("null", b"null"),
    ("truncated object", b'{"id": "x", "steps": [{"tool": '),
    ("json lines of scalars", b"1\n2\n3\n"),
]


@pytest.mark.parametrize("name", [n for n in NAMES if n != "otlp-logs"])  # an empty logs file is valid: no records
@pytest.mark.parametrize(("label", "data"), HANDPICKED, ids=[h[0] for h in HANDPICKED])
def test_handpicked_bad_input_raises_invalid_input(name, label, data):
    assert _outcome(name, data) == "invalid", f"{label} was read as trajectories"


def test_zz_report_counts():
    """Runs last in this module: records how many inputs each adapter was given."""
    for (name, outcome), n in sorted(TRIED.items()):
        report(f"adapter.{name}.{outcome}", n)
    assert sum(TRIED.values()) > 0
