"""Grading cost per step for trajectories of 10, 100, 1,000 and 10,000 steps.

Realistic arguments (an order id, an email, a URL, a nested item list, ~100 bytes) and ~400-byte
results. Each size is graded repeatedly for about the same total number of steps; the figure is
the median of 3 rounds. The baseline is the 100-step trajectory, measured in the same run: the
ratio column says how the per-step cost at each size compares with it (provenance indexes each
source once, so it should stay near 1).

    python benchmarks/grade_scaling.py
"""

from __future__ import annotations

import random
import statistics
import sys
import time

from luckrate.core.grade import grade
from luckrate.core.spec import Spec
from luckrate.core.step import Step, Trajectory

SIZES = (10, 100, 1_000, 10_000)
STEPS_PER_ROUND = 40_000
TOOLS = ["lookup_order", "issue_refund", "fetch_webpage", "send_email", "search_kb", "escalate_to_human"]
SPEC = Spec.from_dict({
    "tools": TOOLS, "required": ["lookup_order"], "forbidden": [],
    "before": [("lookup_order", "issue_refund")], "max_steps": 50_000, "untrusted": ["fetch_webpage"],
    "privileged": ["send_email", "issue_refund"], "max_duration": 1e9,
})


def _result(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(["order", "shipped", "customer", "refund", "policy", "days", "the", "a"]) for _ in range(40))
    return (f'{{"order_id": "ORD-{i:06d}", "email": "user{i}@example.com", "status": "delivered", '
            f'"url": "https://shop.example/orders/{i}", "note": "{words}"}}')[:400].ljust(400)


def trajectory(n: int, seed: int = 7) -> Trajectory:
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        ref = rng.randrange(max(i, 1))
        args = {"order_id": f"ORD-{ref:06d}", "to": f"user{ref}@example.com",
                "items": [{"sku": f"SKU-{ref % 97}", "qty": 2}], "note": "please handle this today"}
        steps.append(Step(i, TOOLS[i % len(TOOLS)], args, _result(rng, i), None, 1_700_000_000 + i, 0.05))
    return Trajectory(f"bench-{n}", tuple(steps), input="Refund order ORD-000000 for user0@example.com")


def per_step_us(traj: Trajectory) -> float:
    reps = max(1, STEPS_PER_ROUND // len(traj.steps))
    start = time.perf_counter()
    for _ in range(reps):
        grade(traj, SPEC)
    return (time.perf_counter() - start) / (reps * len(traj.steps)) * 1e6


def main() -> int:
    trajs = {n: trajectory(n) for n in SIZES}
    figures = {n: statistics.median(per_step_us(trajs[n]) for _ in range(3)) for n in SIZES}
    base = figures[100]
    print(f"{'steps':>7}  {'µs/step':>8}  {'vs 100':>6}")
    for n in SIZES:
        print(f"{n:>7}  {figures[n]:>8.2f}  {figures[n] / base:>5.2f}x")
    flat = figures[10_000] / base
    print(f"per-step cost at 10,000 steps is {flat:.2f}x that at 100 (target: within 2x)")
    return 0 if flat <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
