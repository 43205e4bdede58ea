"""What every interop test checks: a real client sent these runs to the real server (tests/service/harness
Server, a subprocess on loopback), and luckrate graded each exactly as the core grades the same runs
in-process — output and path verdicts per run, taint findings — with no request refused.

Each test sends as its own agent name, so one server serves a whole module and each test reads only its
own runs' series (the example spec is a single SPEC: every agent is graded by it, and the first 20 agent
names become label values).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from luckrate import demo
from tests.service.harness import Server, core_verdicts, record_runs, total, wait_until

KINDS = ("clean", "tainted", "forbidden", "user_supplied", "failing", "unjudged")
"""A tainted run (taint must be found), the user-supplied look-alike (must not be), a lucky one, a clean
one, a failing one and one without an output verdict."""
OUTPUT = {True: "pass", False: "fail", None: "unknown"}


def runs_for(agent: str, kinds: Sequence[str] = KINDS) -> list[demo.Run]:
    return [demo.make_run(k, i, agent) for i, k in enumerate(kinds)]


def assert_graded_right(server: Server, agent: str, runs: Sequence[demo.Run]) -> dict:
    """Wait for luckrate's verdicts on ``agent``'s runs and compare them with the core's; returns the scrape."""
    expected, taint = core_verdicts(record_runs(runs))
    assert taint == sum(r.kind == "tainted" for r in runs)

    def graded():
        s = server.scrape()
        return s if total(s, "luckrate_runs_total", agent=agent) == len(runs) else None

    s = wait_until(graded, f"{len(runs)} graded runs of {agent}")
    got = Counter(
        {
            (o, p): total(s, "luckrate_runs_total", agent=agent, output=o, path=p)
            for o in OUTPUT.values()
            for p in ("ok", "bad")
        }
    )
    assert +got == +expected, (agent, got, expected)
    assert total(s, "luckrate_taint_total", agent=agent) == taint
    assert (
        total(s, "luckrate_taint_total", agent=agent, privileged_tool="send_email", source_tool="fetch_webpage")
        == taint
    )
    assert total(s, "luckrate_requests_refused_total") == 0, "a request was refused"
    return s
