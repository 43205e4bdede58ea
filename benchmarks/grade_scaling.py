"""Grading cost per step for trajectories of 10, 100, 1,000 and 10,000 steps.

Realistic arguments (an order id, an email, a URL, a nested item list, ~100 bytes) and ~400-byte
results. Each size is graded repeatedly for about the same total number of steps; the figure is
the median of 3 rounds. The baseline is the 100-step trajectory, measured in the same run: the
ratio column says how the per-step cost at each size compares with it (provenance indexes each
source once, so it should stay near 1). A second table grades the same trajectories under the spec
plus every policy key (before with ``same``, confirm, terminal, once_per, max_parallel, args with
``from``): same-value ordering and once-per are one set/dict probe per call, so it should stay flat too.

    python benchmarks/grade_scaling.py
"""

from __future__ import annotations

import random
import statistics
import sys
import time

from luckrate.core.grade import grade
from luckrate.core.spec import Spec
from luckrate.core.spec_loader import spec_from_dict
from luckrate.core.step import Message, Step, Trajectory

SIZES = (10, 100, 1_000, 10_000)
STEPS_PER_ROUND = 40_000
TOOLS = ["lookup_order", "issue_refund", "fetch_webpage", "send_email", "search_kb", "escalate_to_human"]
SPEC = spec_from_dict(
    {
        "tools": TOOLS,
        "required": ["lookup_order"],
        "forbidden": [],
        "before": [("lookup_order", "issue_refund")],
        "max_steps": 50_000,
        "untrusted": ["fetch_webpage"],
        "privileged": ["send_email", "issue_refund"],
        "max_duration": 1e9,
    }
)
POLICY_SPEC = spec_from_dict(
    {
        "tools": TOOLS + ["close_ticket"],
        "required": ["lookup_order"],
        "max_steps": 50_000,
        "max_duration": 1e9,
        "before": [
            ("lookup_order", "issue_refund"),
            {"first": "lookup_order", "then": ["issue_refund", "send_email"], "same": "order_id"},
        ],
        "untrusted": ["fetch_webpage"],
        "privileged": ["send_email", "issue_refund"],
        "confirm": ["issue_refund"],
        "terminal": ["close_ticket"],
        "once_per": {"issue_refund": "order_id"},
        "max_parallel": 2,
        "args": {
            "send_email": {"to": {"from": ["user", "tool:lookup_order"]}},
            "issue_refund": {"order_id": {"match": r"ORD-\d+"}, "items": {"from": ["user", "tool:lookup_order"]}},
        },
    }
)


def _result(rng: random.Random, i: int) -> str:
    words = " ".join(
        rng.choice(["order", "shipped", "customer", "refund", "policy", "days", "the", "a"]) for _ in range(40)
    )
    return (
        f'{{"order_id": "ORD-{i:06d}", "email": "user{i}@example.com", "status": "delivered", '
        f'"url": "https://shop.example/orders/{i}", "note": "{words}"}}'
    )[:400].ljust(400)


def trajectory(n: int, seed: int = 7) -> Trajectory:
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        ref = rng.randrange(max(i, 1))
        args = {
            "order_id": f"ORD-{ref:06d}",
            "to": f"user{ref}@example.com",
            "items": [{"sku": f"SKU-{ref % 97}", "qty": 2}],
            "note": "please handle this today",
        }
        steps.append(Step(i, TOOLS[i % len(TOOLS)], args, _result(rng, i), None, 1_700_000_000 + i, 0.05))
    # A question and a yes every 10 steps; two calls per model turn.
    messages = [Message("user", "Refund order ORD-000000 for user0@example.com", 0)]
    for i in range(10, n, 10):
        messages += [Message("agent", f"Refund ORD-{i:06d}?", i), Message("user", "yes, go ahead", i)]
    return Trajectory(
        f"bench-{n}",
        tuple(steps),
        input="Refund order ORD-000000 for user0@example.com",
        messages=tuple(messages),
        model_turns=tuple(i // 2 for i in range(n)),
    )


def per_step_us(traj: Trajectory, spec: Spec = SPEC) -> float:
    reps = max(1, STEPS_PER_ROUND // len(traj.steps))
    start = time.perf_counter()
    for _ in range(reps):
        grade(traj, spec)
    return (time.perf_counter() - start) / (reps * len(traj.steps)) * 1e6


def table(trajs: dict[int, Trajectory], spec: Spec, title: str) -> float:
    """Print one table; return the 10,000-step cost over the 100-step cost."""
    figures = {n: statistics.median(per_step_us(trajs[n], spec) for _ in range(3)) for n in SIZES}
    base = figures[100]
    print(title)
    print(f"{'steps':>7}  {'µs/step':>8}  {'vs 100':>6}")
    for n in SIZES:
        print(f"{n:>7}  {figures[n]:>8.2f}  {figures[n] / base:>5.2f}x")
    flat = figures[10_000] / base
    print(f"per-step cost at 10,000 steps is {flat:.2f}x that at 100 (target: within 2x)")
    return flat


def main() -> int:
    trajs = {n: trajectory(n) for n in SIZES}
    flat = table(trajs, SPEC, "the benchmark spec")
    flat_policy = table(trajs, POLICY_SPEC, "\nthe same plus every policy key")
    return 0 if max(flat, flat_policy) <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
