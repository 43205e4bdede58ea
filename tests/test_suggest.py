"""`luckrate suggest`: the signals, the one bounded pass, the proposed file (it loads and grades), and
bad input. Runs are the committed framework captures and example runs; where a case needs runs no
framework records (10,000 tool names, a hostile tool name), they are built here and the test says so."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from examples.spec import SPEC as EXAMPLE_SPEC
from luckrate.adapters.formats import reader
from luckrate.cli import main, tally_file
from luckrate.core.spec_loader import load_specs
from luckrate.core.suggest import Tally, Thresholds, compare, propose, render, signals
from luckrate.core.suggest.tally import MAX_TOOLS
from tests.core.helpers import run, step

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "testdata"

NAMES = [  # (tool name, acting verb, reading verb)
    ("send_invoice", "send", None),
    ("sendInvoice", "send", None),
    ("create-ticket", "create", None),
    ("PostComment", "post", None),
    ("issue_credit_note", "issue", None),
    ("customer_delete", "delete", None),
    ("list_repositories", None, "list"),
    ("getWeather", None, "get"),
    ("email_search", None, "search"),
    ("lookup_customer", None, "lookup"),
    ("weather", None, None),
    ("contact_lookup", None, "lookup"),
    ("order_cancel", "cancel", None),
    ("reply_to_comment", "reply", None),
    ("post_message", "post", None),
    ("GmailSendEmail", "send", None),
    ("TwitterManagerReadTweet", None, "read"),
    ("SmartLockUnlockDoor", "unlock", None),
    ("GitHubGetRepositoryDetails", None, "get"),
]

DESCRIPTIONS = [  # (description, acting verb, reading verb)
    ("Sends a text message to a phone number.", "send", None),
    ("Creates a new ticket in the tracker", "create", None),
    ("Searches the knowledge base.", None, "search"),
    ("Returns the current exchange rate.", None, "return"),
    ("Use this tool to transfer funds between accounts.", "transfer", None),
    ("Allows the agent to look up a customer by id.", None, "look"),
    ("", None, None),
]

SHAPES = [  # (arguments, shapes they carry)
    ({"to": "carol@example.org", "body": "hi"}, {"address", "param:to", "param:body"}),
    ({"account": "NL91ABNA0417164300", "sum": 5}, {"account"}),
    ({"url": "https://example.org/a"}, {"url"}),
    ({"target": "www.example.org/x"}, {"url"}),
    ({"file_name": "report.txt", "n": 3}, set()),
    ({"query": "budget 2025"}, set()),
]

RESULTS = [  # (result, holds sentences, holds markup, fields holding sentences)
    ("Thanks for the order, we will ship it on Monday.", True, False, set()),
    ('{"subject": "Hi", "body": "Could you send me the report before the meeting?"}', True, False, {"body"}),
    ("<p>Welcome</p>", False, True, set()),
    ('{"status": "shipped", "eta": "2025-05-01"}', False, False, set()),
    ("Open Monday to Friday, 9:00 to 17:00", False, False, set()),
    ("Blue Lagoon Hotel, Grand Plaza, Seaside Inn.", False, False, set()),
]


@pytest.mark.parametrize("name, act, read", NAMES)
def test_name_verbs(name, act, read):
    assert signals.name_verbs(name) == (act, read)


@pytest.mark.parametrize("description, act, read", DESCRIPTIONS)
def test_description_verb(description, act, read):
    assert signals.description_verb(description) == (act, read)


@pytest.mark.parametrize("args, shapes", SHAPES)
def test_argument_shapes(args, shapes):
    assert signals.argument_shapes(args) == shapes


@pytest.mark.parametrize("result, sentences, markup, named", RESULTS)
def test_result_shape(result, sentences, markup, named):
    got = signals.result_shape(result)
    assert (got.sentences, got.markup, set(got.named)) == (sentences, markup, named)


@pytest.mark.parametrize("name", ["transfer_to_billing_agent", "handoff", "transfer_to_human_agents"])
def test_a_handoff_is_neither_privileged_nor_untrusted(name):
    tally = Tally()
    for _ in range(3):
        tally.add(
            run(
                step(name, {"to": "billing"}, "You are now talking to the billing team, who will help."), output_ok=True
            )
        )
    (p,), _ = propose(tally)
    assert (p.privileged, p.untrusted) == ((), ())


def _proposal(*runs_):
    tally = Tally()
    for r in runs_:
        tally.add(r)
    (p,), notes = propose(tally)
    return p, notes


def test_lists_from_names_arguments_and_results():
    p, _ = _proposal(
        *[
            run(
                step("lookup_customer", {"id": "C-1"}, '{"id": "C-1", "tier": "gold"}'),
                step(
                    "read_reviews",
                    {"id": "C-1"},
                    '[{"stars": 2, "text": "The parcel arrived late and the box was torn."}]',
                ),
                step("courier", {"recipient": "dan@example.org", "note": "sorry"}, "ok"),
                step("issue_credit_note", {"id": "C-1", "amount": 10}, "done"),
            )
            for _ in range(3)
        ]
    )
    assert [e.tool for e in p.privileged] == ["courier", "issue_credit_note"]
    assert p.privileged[0].why == "arguments carry an address; takes 'recipient'"
    assert p.privileged[1].why == "name verb 'issue'; takes 'amount'"
    assert [e.tool for e in p.untrusted] == ["read_reviews"]
    assert "100% of 3 results hold sentences" in p.untrusted[0].why


def test_a_template_filled_by_the_system_is_not_third_party_text():
    template = run(
        *[
            step(
                "get_balance",
                {"account": f"A-{i}"},
                f"Your balance is {i}.50 dollars as of {i} May and no payment is pending.",
            )
            for i in range(6)
        ]
    )
    people = run(
        *[
            step("get_feedback", {"n": i}, text)
            for i, text in enumerate(
                [
                    "The app crashed twice while I was paying.",
                    "Please add a dark mode, my eyes hurt at night.",
                    "Support answered quickly and fixed my problem.",
                    "I was charged twice for the same order!",
                    "Why does the export take so long on large files?",
                    "Great update, the search is finally fast.",
                ]
            )
        ]
    )
    page = run(
        *[
            step("fetch_page", {"url": "https://example.org/faq"}, "Refunds are paid within five working days.")
            for _ in range(6)
        ]
    )  # the same page every time: a template by shape, a web page by name
    p, _ = _proposal(template, people, page)
    assert [e.tool for e in p.untrusted] == ["fetch_page", "get_feedback"]


def test_a_senders_templated_messages_propose_trusting_its_records():
    # The platform's own messages (a code in one template, a new code each time) are a system's: suggest proposes
    # trusting that sender's records. A colleague's mail seen in every run is one message, however often read.
    def inbox(i: int) -> str:
        return json.dumps(
            [
                {"sender": "Ana@Corp.test", "body": "Lunch on Friday? The usual place near the station."},
                {"sender": "no-reply@bank.test", "body": f"Your one-time code is {4812 + 7 * i}. It expires soon."},
            ]
        )

    p, _ = _proposal(*[run(step("read_inbox", {}, inbox(i))) for i in range(6)])
    assert [e.tool for e in p.untrusted] == ["read_inbox"]
    assert [(t.tool, t.field, t.address) for t in p.trusted] == [("read_inbox", "sender", "no-reply@bank.test")]
    text = render([p], [])
    (spec,) = _load(text).values()
    assert dict(spec.trusted_records) == {"read_inbox": {"sender": ("no-reply@bank.test",)}}
    few, _ = _proposal(*[run(step("read_inbox", {}, inbox(i))) for i in range(3)])
    assert few.trusted == ()  # three messages are not yet a template


def test_field_level_untrusted_when_every_sentence_sits_in_a_named_field():
    r = run(
        step(
            "fetch_tickets",
            {},
            '[{"id": 7, "title": "Login", "body": "I cannot log in since the update, please help."}]',
        )
    )
    tally = Tally()
    for _ in range(3):
        tally.add(r)
    (p,), _ = propose(tally, Thresholds(fields=True))
    assert p.untrusted[0].fields == ("body",)
    specs = _load(render([p], []))
    assert specs["*"].untrusted_fields == {"fetch_tickets": frozenset({"body"})}


BEFORE = [  # (runs as tool sequences with an order id, expected rules)
    ([["find", "pay"]] * 3, [("find", "pay", ("order", "order"))]),
    ([["find", "pay"]] * 2, []),  # too few runs
    ([["find", "pay"], ["find", "pay"], ["pay"]], []),  # one run pays without finding first
    ([["find", "pay"], ["find", "pay"], ["pay", "find"]], []),
    (
        [["a", "b", "c"]] * 3,
        [("a", "b", ("order", "order")), ("a", "c", ("order", "order")), ("b", "c", ("order", "order"))],
    ),
]


@pytest.mark.parametrize("sequences, expected", BEFORE)
def test_before_rules_hold_in_every_usable_run(sequences, expected):
    runs_ = [run(*[step(t, {"order": f"O-{i}"}) for t in seq], id=str(i)) for i, seq in enumerate(sequences)]
    p, _ = _proposal(*runs_, run(step("pay", {"order": "x"}), output_ok=False))  # a failed run is not evidence
    assert [(r.first, r.then, r.same) for r in p.before] == expected


def test_before_without_a_shared_argument_is_a_pair_and_chains_are_reduced():
    runs_ = [run(step("a", {"k": i}), step("b", {"k": i + 1}), step("c", {"k": i + 2}), id=str(i)) for i in range(3)]
    p, _ = _proposal(*runs_)
    assert [(r.first, r.then, r.same) for r in p.before] == [("a", "b", None), ("b", "c", None)]
    assert "('a', 'b'),  # held in all 3 usable runs calling 'b'" in render([p], [])


def test_max_steps_is_the_stated_quantile():
    p, _ = _proposal(*[run(*[step("get_x")] * n, id=str(n)) for n in range(1, 101)])
    assert p.max_steps == 99 and p.max_steps_why.startswith("p99 of 100 usable runs")


def test_never_proposes_forbidden():
    p, _ = _proposal(*[run(step("delete_everything", {"all": True}), id=str(i)) for i in range(5)])
    text = render([p], [])
    assert '"forbidden":' not in text and not _load(text)["*"].forbidden


def test_output_is_deterministic_whatever_the_order_of_runs():
    runs_ = _read_captures("otlp", "*.openai-agents.otlp")
    texts = set()
    for seed in range(3):
        random.Random(seed).shuffle(runs_)
        tally = Tally()
        for r in runs_:
            tally.add(r)
        texts.add(render(*propose(tally)))
    assert len(texts) == 1


def _read_captures(folder, pattern, fmt="otlp"):
    return [
        t
        for path in sorted((DATA / folder).glob(pattern))
        if "nocontent" not in path.name
        for t in reader(fmt)(path.read_bytes(), str(path))
    ]


def _load(text):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "proposed.py"
        path.write_text(text)
        return load_specs(path)


CAPTURES = [  # (folder, glob, format): every framework in tests/testdata, and the example runs
    ("otlp", "*.openai-agents.otlp", "otlp"),
    ("otlp", "*.openai-agents.otlp.json", "otlp-json"),
    ("langgraph", "*.openinference.otlp", "otlp"),
    ("langgraph", "*.traceloop.otlp", "otlp"),
    ("langgraph", "[a-z_]*[a-z].json", "langgraph"),
    ("vercel-ai", "*.vercel-ai.otlp", "otlp"),
    ("langchainjs", "*.langchainjs.otlp", "otlp"),
    ("google-adk", "*.v1.google-adk.otlp", "otlp"),
    ("google-adk", "*.v2.google-adk.otlp", "otlp"),
    ("strands", "*.latest.strands.otlp", "otlp"),
    ("pydantic-ai", "*.v1.pydantic-ai.otlp", "otlp"),
    ("llama-index", "*.llama-index.otlp", "otlp"),
    ("autogen", "*.autogen.otlp", "otlp"),
    ("crewai", "*.json", "crewai"),
    ("n8n", "[!m]*.json", "n8n"),
    ("../../examples", "runs.jsonl", "trajectory"),
]


def _suggested(folder, pattern, fmt, content=True):
    tally = Tally()
    for path in sorted((DATA / folder).glob(pattern)):
        if ("nocontent" in path.name) == content or (fmt == "langgraph" and path.name.count(".") > 1):
            continue
        tally_file(tally, str(path), fmt)
    return propose(tally)


@pytest.mark.parametrize("folder, pattern, fmt", CAPTURES, ids=[f"{c[0]}/{c[1]}" for c in CAPTURES])
def test_every_capture_proposes_a_spec_that_loads_and_finds_the_hand_written_lists(folder, pattern, fmt):
    proposals, notes = _suggested(folder, pattern, fmt)
    specs = _load(render(proposals, notes))
    privileged = set().union(*(s.privileged for s in specs.values()))
    untrusted = set().union(*(s.untrusted for s in specs.values()))
    # recall 1 against examples/spec.py; what is proposed beyond it is an acting tool (forbidden there) or the
    # URL fetcher (privileged here for its URL argument)
    seen = {t for p in proposals for t, calls, _ in p.tools if calls}
    assert set(EXAMPLE_SPEC["privileged"]) & seen <= privileged
    assert privileged - set(EXAMPLE_SPEC["privileged"]) <= {"delete_account", "fetch_webpage", "cancel_order"}
    assert untrusted == {"fetch_webpage"} & seen


@pytest.mark.parametrize(
    "folder, pattern",
    [
        ("otlp", "*.openai-agents.nocontent.otlp"),
        ("google-adk", "*.v2.nocontent.google-adk.otlp"),
        ("strands", "*.latest.nocontent.strands.otlp"),
    ],
)
def test_content_capture_off_says_so_and_reads_names_only(folder, pattern):
    proposals, notes = _suggested(folder, pattern, "otlp", content=False)
    p = next(p for p in proposals if p.agent == "support_agent")
    assert any("content capture off" in n for n in p.notes)
    assert {e.tool for e in p.privileged} >= {"send_email"}
    assert {e.tool: e.why for e in p.untrusted}.get("fetch_webpage", "").endswith(
        "(from the name only: no result was captured)"
    )
    _load(render(proposals, notes))


def test_tool_descriptions_from_the_trace_are_read():
    proposals, _ = _suggested("google-adk", "*.v2.google-adk.otlp", "otlp")
    p = next(p for p in proposals if p.agent == "support_agent")
    assert "description verb 'refund'" in {e.tool: e.why for e in p.privileged}["issue_refund"]
    assert ("escalate_to_human", 0, 0) in p.tools  # defined in the trace, never called


DEFINED = [  # (capture, format, what the trace says of issue_refund: description, parameter names)
    ("google-adk/clean.v1.google-adk.otlp", "otlp", "Refund an order.", set()),
    ("google-adk/clean.v2.google-adk.otlp", "otlp", "Refund an order.", {"amount", "order_id"}),
    ("strands/clean.latest.strands.otlp", "otlp", "Refund an order.", {"amount", "order_id"}),
    ("pydantic-ai/clean.v1.pydantic-ai.otlp", "otlp", "Refund an order.", {"amount", "order_id"}),
    ("autogen/clean.autogen.otlp", "otlp", "Refund an order.", set()),
    ("llama-index/clean.llama-index.otlp", "otlp", "Refund an order.", {"amount", "order_id"}),
    ("langgraph/clean.openinference.otlp", "otlp", "Refund an order.", set()),
    ("vercel-ai/clean.vercel-ai.otlp.json", "otlp-json", "issue refund", {"amount", "order_id"}),
]


@pytest.mark.parametrize("capture, fmt, description, params", DEFINED, ids=[d[0] for d in DEFINED])
def test_tool_definitions_are_read_where_each_convention_puts_them(capture, fmt, description, params):
    from luckrate.adapters.otlp.definitions import definitions_from_file

    found = definitions_from_file((DATA / capture).read_bytes(), fmt)
    ((_, tools),) = found.items()
    assert tools["issue_refund"] == (description, frozenset(params))


def test_definitions_of_an_undecodable_file_are_none():
    from luckrate.adapters.otlp.definitions import definitions_from_file

    assert definitions_from_file(b"\x00not otlp", "otlp") == {} == definitions_from_file(b"{", "otlp-json")


def test_ten_thousand_tool_names_are_bounded_with_a_note():
    # Built here: no framework capture calls 10,000 distinct tools.
    tally = Tally()
    for i in range(10_000):
        tally.add(run(step(f"tool_{i:05d}", {"q": i}, "ok"), id=str(i)))
    proposals, notes = propose(tally)
    text = render(proposals, notes)
    assert len(proposals[0].tools) == MAX_TOOLS
    assert (
        "more than 1,000 distinct tool names: 9,000 further names (9,000 calls) were counted but not proposed" in notes
    )
    assert len(text.splitlines()) < MAX_TOOLS + 50
    assert len(_load(text)["*"].tools) == MAX_TOOLS


def test_a_hostile_tool_name_is_a_string_in_the_file_and_nothing_runs(tmp_path):
    # Built here: tool names come from span data, so the file must hold them as literals, never as code.
    name = 'x", "y"]}\nimport os; os.system("touch ' + str(tmp_path / "pwned") + '")  #\u2028'
    p, notes = _proposal(*[run(step(name, {"to": "a@b.test"}), id=str(i)) for i in range(3)])
    specs = _load(render([p], notes))
    assert specs["*"].tools == (name,) and not (tmp_path / "pwned").exists()


_names = st.text(max_size=12)
_calls = st.lists(
    st.tuples(
        st.sampled_from(["send_x", "get_y", "z"]) | _names,
        st.dictionaries(_names, st.one_of(st.integers(), _names, st.none()), max_size=3),
        st.one_of(st.none(), st.text(max_size=80)),
        st.booleans(),
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), _names), _calls, st.one_of(st.none(), st.booleans())), min_size=1, max_size=8
    )
)
def test_whatever_the_runs_the_proposed_file_loads(runs_):
    # Built here: names, arguments and results are arbitrary text, as span data may be.
    from dataclasses import replace

    tally = Tally()
    for i, (agent, calls, ok) in enumerate(runs_):
        steps = [step(tool, args, result, None if good else "boom") for tool, args, result, good in calls]
        tally.add(replace(run(*steps, id=str(i), output_ok=ok), agent=agent))
    proposals, notes = propose(tally)
    specs = _load(render(proposals, notes))
    keys = {"*"} if len(proposals) == 1 else {p.agent if p.agent is not None else "*" for p in proposals}
    assert set(specs) == keys


def test_check_reports_what_the_spec_does_not_say(tmp_path, capsys):
    runs_file = str(ROOT / "examples" / "runs.jsonl")
    assert main(["suggest", "--check", str(ROOT / "examples" / "spec.py"), runs_file]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "agent 'support': tool 'delete_account' in tools but never seen in the traffic" in out
    assert any(line.startswith("agent 'support': 'fetch_webpage' looks privileged") for line in out)
    proposed = tmp_path / "proposed.py"
    assert main(["suggest", "-o", str(proposed), runs_file]) == 0
    assert main(["suggest", "--check", str(proposed), runs_file]) == 0
    assert capsys.readouterr().out.strip() == f"{proposed}: agrees with the traffic"
    assert compare(*propose_from(runs_file)) == []


def propose_from(path):
    tally = Tally()
    tally_file(tally, path, "trajectory")
    proposals, _ = propose(tally)
    spec = _load(render(proposals, []))
    return proposals, spec


BAD = [  # (file content, format, the error's text)
    ("", "trajectory", "empty file"),
    ('{"resourceSpans": []}', "otlp-json", "no agent runs in {path}: nothing to suggest from ({path}: no agent runs)"),
    (
        (
            '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0123456789abcdef0123456789abcdef","spanId":'
            '"0123456789abcdef","name":"GET /health","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}'
        ),
        "otlp-json",
        "no agent runs in {path}: nothing to suggest from (1 trace made no run, skipped",
    ),
]


@pytest.mark.parametrize("content, fmt, error", BAD)
def test_a_file_with_no_agent_runs_exits_2_naming_it(tmp_path, capsys, content, fmt, error):
    path = tmp_path / "day.json"
    path.write_text(content)
    assert main(["suggest", "--format", fmt, str(path)]) == 2
    assert error.format(path=path) in capsys.readouterr().err


def test_a_trace_that_makes_no_run_is_counted_beside_the_runs(tmp_path, capsys):
    other = tmp_path / "http.json"
    other.write_text(BAD[2][0])
    capture = str(DATA / "otlp" / "clean.openai-agents.otlp.json")
    assert main(["suggest", "--format", "otlp-json", str(other), capture]) == 0
    captured = capsys.readouterr()
    assert "# note: 1 trace made no run, skipped" in captured.out
    assert "luckrate: note: 1 trace made no run, skipped" in captured.err


@pytest.mark.e2e  # `python -m luckrate.cli` as a subprocess
def test_the_real_cli_writes_a_spec_that_luckrate_grade_loads(tmp_path):
    files = sorted(str(p) for p in (DATA / "otlp").glob("*.openai-agents.otlp") if "nocontent" not in p.name)
    spec = tmp_path / "spec.py"
    env_cmd = [sys.executable, "-m", "luckrate.cli"]
    made = subprocess.run(
        [*env_cmd, "suggest", "--format", "otlp", "-o", str(spec), *files], check=False, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    graded = subprocess.run(
        [*env_cmd, "grade", "--json", "--format", "otlp", "--spec", str(spec), *files],
        check=False,
        capture_output=True,
        text=True,
    )
    assert graded.returncode in (0, 1), graded.stderr
    report = json.loads(graded.stdout)
    assert len(report["runs"]) == len(files)
    taint = {r["id"] for r in report["runs"] for v in r["violations"] if v["check"] == "taint"}
    assert len(taint) == 1  # the injected run, as under the hand-written spec


@pytest.mark.e2e  # benchmarks/suggest.py as a subprocess
def test_the_dev_set_proposes_a_spec_that_loads_and_the_benchmark_prints_its_tables():
    bench = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "suggest.py"), "--sample", "8"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bench.returncode == 0, bench.stderr
    for heading in (
        "proposed lists vs detection.py's hand-written ones",
        "taint graded with the proposed spec",
        "Framework captures and example runs",
    ):
        assert heading in bench.stdout
    for suite in ("banking", "slack", "travel", "workspace"):
        assert f"{suite:10} privileged" in bench.stdout and f"{suite:10} untrusted" in bench.stdout


@pytest.mark.parametrize("how", ["--logs", "detected"])
def test_suggest_reads_the_log_records_beside_their_traces(tmp_path, capsys, how):
    # A hand-written loop under the contrib OpenAI instrumentation records the tool calls only in log
    # records: without them suggest saw no tool at all.
    from luckrate.cli import main

    base = ROOT / "tests" / "testdata" / "openai-v2" / "injected.legacy.openai-v2"
    traces, logs = f"{base}.traces.otlp", f"{base}.logs.otlp"
    argv = [traces, "--logs", logs] if how == "--logs" else [logs, traces]
    out = tmp_path / "spec.py"
    assert main(["suggest", "--format", "otlp", "-o", str(out), *argv]) == 0
    spec = load_specs(out)
    tools = set(next(iter(spec.values())).tools)
    assert {"lookup_order", "fetch_webpage", "send_email"} <= tools
