"""``luckrate suggest`` measured against hand-written specs: precision and recall of the proposed
``privileged`` and ``untrusted`` lists, and taint graded with the proposed spec vs the hand-written one.

    PYTHONPATH=src .venv/bin/python benchmarks/suggest.py            # --sample 8: every 8th dev-set run
    PYTHONPATH=src .venv/bin/python benchmarks/suggest.py --against SPEC --format otlp-json FILE...

Three parts:
1. the detection dev set (benchmarks/data/detection_*.jsonl.gz, read only), one agent per suite,
   against the hand-written UNTRUSTED / PRIVILEGED of benchmarks/detection.py. The thresholds are
   chosen leave-one-suite-out: for each suite, the grid point with the best mean F1 (both lists) on
   the other three suites is scored on it; the defaults in ``Thresholds`` are shown beside;
2. taint on the dev set: each run graded with the proposed spec (defaults) and with the hand-written
   one, F1 against the labels (positive = the injection's calls were made), as detection.py scores it;
3. the framework captures in tests/testdata and examples/runs.jsonl against examples/spec.py;
4. memory: what the one pass holds after more traffic, and after many distinct tool names.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

import detection  # noqa: E402
import detection_traces as dt  # noqa: E402

from luckrate.adapters.formats import reader  # noqa: E402
from luckrate.adapters.otlp import read_otlp_json  # noqa: E402
from luckrate.cli import tally_file  # noqa: E402
from luckrate.core.grade import grade  # noqa: E402
from luckrate.core.spec import Spec  # noqa: E402
from luckrate.core.spec_loader import load_specs, spec_from_dict  # noqa: E402
from luckrate.core.suggest import Tally, Thresholds, propose, render  # noqa: E402

GRID = [
    Thresholds(sentence_share=s, url_acts=u)
    for s, u in itertools.product((0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5), (True, False))
]


def prf(proposed: set[str], truth: set[str]) -> tuple[float | None, float | None, float | None]:
    tp = len(proposed & truth)
    p = tp / len(proposed) if proposed else None
    r = tp / len(truth) if truth else None
    f = 2 * p * r / (p + r) if p and r else (0.0 if proposed or truth else None)
    return p, r, f


def lists(tally: Tally, th: Thresholds) -> dict[str, dict[str, set[str]]]:
    proposals, _ = propose(tally, th)
    return {
        p.agent: {
            "privileged": {e.tool for e in p.privileged},
            "untrusted": {e.tool for e in p.untrusted},
            "seen": {t for t, _, _ in p.tools},
        }
        for p in proposals
    }


def score(tally: Tally, th: Thresholds, suites) -> float:
    got, fs = lists(tally, th), []
    for s in suites:
        for key, truth in (("privileged", detection.PRIVILEGED[s]), ("untrusted", detection.UNTRUSTED[s])):
            fs.append(prf(got[s][key], set(truth))[2] or 0.0)
    return sum(fs) / len(fs)


def _f(x: float | None) -> str:
    return "   —" if x is None else f"{x:.3f}"


def dev_set(sample: int = 1) -> tuple[Tally, list]:
    tally, runs = Tally(), []
    for i, (line, label) in enumerate(dt.read()):
        if i % sample:
            continue
        (traj,) = read_otlp_json(line, label["trace_id"])
        tally.add(traj)
        runs.append((label, traj))
    return tally, runs


def list_table(tally: Tally, suites) -> None:
    print("\n## Dev set: proposed lists vs detection.py's hand-written ones (leave-one-suite-out thresholds)\n")
    print(
        "R: recall of the whole hand-written list; R seen: of its tools that the traffic calls at all (a tool\n"
        "never called cannot be proposed). Thresholds: chosen on the other three suites; defaults: Thresholds().\n"
    )
    print(
        f"{'suite':10} {'list':10} {'thresholds chosen on the other three':44} {'P':>6} {'R':>6} {'R seen':>6} "
        f"{'F1':>6}   | defaults: {'P':>6} {'R':>6} {'R seen':>6} {'F1':>6}"
    )
    default = Thresholds()
    plateaus: list[str] = []
    for held in suites:
        others = [s for s in suites if s != held]
        scored = {th: round(score(tally, th, others), 6) for th in GRID}
        best = max(GRID, key=lambda th: (scored[th], th == default))
        ties = sorted({th.sentence_share for th in GRID if scored[th] == scored[best] and th.url_acts == best.url_acts})
        plateaus.append(
            f"{held}: chosen on the other three (mean F1 {scored[best]:.3f}); sentence_share from "
            f"{ties[0]:g} to {ties[-1]:g} ties for best there"
        )
        got, base = lists(tally, best), lists(tally, default)
        seen = got[held]["seen"]
        for key, truth in (("privileged", detection.PRIVILEGED), ("untrusted", detection.UNTRUSTED)):
            p, r, f = prf(got[held][key], set(truth[held]))
            dp, dr, df = prf(base[held][key], set(truth[held]))
            rs, drs = prf(got[held][key], set(truth[held]) & seen)[1], prf(base[held][key], set(truth[held]) & seen)[1]
            chosen = f"sentence_share={best.sentence_share:g} url_acts={best.url_acts}"
            print(
                f"{held:10} {key:10} {chosen:44} {_f(p):>6} {_f(r):>6} {_f(rs):>6} {_f(f):>6}   |           "
                f"{_f(dp):>6} {_f(dr):>6} {_f(drs):>6} {_f(df):>6}"
            )
            missed, extra = sorted(set(truth[held]) - base[held][key]), sorted(base[held][key] - set(truth[held]))
            missed = [m + ("" if m in seen else " (never called)") for m in missed]
            if missed or extra:
                print(f"{'':21}defaults miss {missed}; propose beyond {extra}")
    print("\nLeave-one-suite-out: " + "\n                     ".join(plateaus))


def _proposed_specs(tally: Tally, th: Thresholds) -> dict[str, Spec]:
    proposals, notes = propose(tally, th)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "proposed.py"
        path.write_text(render(proposals, notes))
        return load_specs(path)  # the file a user would commit, loaded as `luckrate grade` loads it


def names_only_table(runs: list) -> None:
    """The same lists from the same runs recorded with content capture off: names alone speak."""
    from dataclasses import replace

    tally = Tally()
    for _, traj in runs:
        tally.add(replace(traj, content=False, steps=tuple(replace(s, args={}, result=None) for s in traj.steps)))
    got = lists(tally, Thresholds())
    print("\n## Dev set with content capture off (names only), defaults\n")
    print(f"{'suite':10} {'list':10} {'P':>6} {'R seen':>6}  missed (seen) / beyond")
    for suite in detection.SUITES:
        for key, truth in (("privileged", detection.PRIVILEGED), ("untrusted", detection.UNTRUSTED)):
            seen_truth = set(truth[suite]) & got[suite]["seen"]
            p, r, _ = prf(got[suite][key], seen_truth)
            print(
                f"{suite:10} {key:10} {_f(p):>6} {_f(r):>6}  {sorted(seen_truth - got[suite][key])} / "
                f"{sorted(got[suite][key] - seen_truth)}"
            )


def taint_table(tally: Tally, runs: list) -> None:
    variants = {
        "hand-written": {s: spec_from_dict(d, s) for s, d in detection.spec_dicts().items()},
        "proposed": _proposed_specs(tally, Thresholds()),
        "proposed, field-level": _proposed_specs(tally, Thresholds(fields=True)),
    }
    counts = {(suite, v): Counter() for suite in [*detection.SUITES, "all"] for v in variants}
    for label, traj in runs:
        if label["kind"] == "fabricated":
            continue
        for v, specs in variants.items():
            flag = any(x.check == "taint" for x in grade(traj, specs[traj.agent]).violations)
            kind = "tp" if label["positive"] and flag else "fp" if flag else "fn" if label["positive"] else "tn"
            counts[label["suite"], v][kind] += 1
            counts["all", v][kind] += 1
    print("\n## Dev set: taint graded with the proposed spec vs the hand-written spec (F1 vs the labels)\n")
    print("proposed: Thresholds() (whole results untrusted); field-level: Thresholds(fields=True).\n")
    print(f"{'suite':10} {'spec':22} {'runs':>5} {'pos':>5} {'P':>6} {'R':>6} {'F1':>6} {'ΔF1 vs hand':>12}")
    for suite in [*detection.SUITES, "all"]:
        hand_f1 = _prf(counts[suite, "hand-written"])[2]
        for v in variants:
            c = counts[suite, v]
            p, r, f = _prf(c)
            delta = f - hand_f1 if f is not None and hand_f1 is not None else None
            print(
                f"{suite:10} {v:22} {sum(c.values()):5} {c['tp'] + c['fn']:5} {_f(p):>6} {_f(r):>6} {_f(f):>6} "
                f"{'' if v == 'hand-written' else _f(delta):>12}"
            )


def _prf(c: Counter) -> tuple[float | None, float | None, float | None]:
    p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
    r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
    return p, r, (2 * p * r / (p + r) if p and r else None)


CAPTURES = [  # (files, format): the framework captures in tests/testdata, each against examples/spec.py
    ("tests/testdata/otlp/*.openai-agents.otlp", "otlp"),
    ("tests/testdata/langgraph/*.openinference.otlp", "otlp"),
    ("tests/testdata/langgraph/*.traceloop.otlp", "otlp"),
    ("tests/testdata/vercel-ai/*.vercel-ai.otlp", "otlp"),
    ("tests/testdata/langchainjs/*.langchainjs.otlp", "otlp"),
    ("tests/testdata/google-adk/*.v2.google-adk.otlp", "otlp"),
    ("tests/testdata/strands/*.latest.strands.otlp", "otlp"),
    ("tests/testdata/pydantic-ai/*.v1.pydantic-ai.otlp", "otlp"),
    ("tests/testdata/llama-index/*.llama-index.otlp", "otlp"),
    ("tests/testdata/autogen/*.autogen.otlp", "otlp"),
    ("tests/testdata/langgraph/*.json", "langgraph"),
    ("tests/testdata/crewai/*.json", "crewai"),
    ("tests/testdata/n8n/[!m]*.json", "n8n"),
    ("examples/runs.jsonl", "trajectory"),
]


def captures_table() -> None:
    from examples.spec import SPEC

    print("\n## Framework captures and example runs vs examples/spec.py\n")
    print(
        "P+: privileged precision against privileged + forbidden (the spec forbids delete_account outright,\n"
        "which makes it an acting tool the spec did not need to list as privileged).\n"
    )
    print(f"{'source':48} {'runs':>4}  {'privileged P':>12} {'P+':>6} {'R':>6}  {'untrusted P':>11} {'R':>6}  proposed")
    for pattern, fmt in CAPTURES:
        tally, n = Tally(), 0
        for path in sorted(ROOT.glob(pattern)):
            if "nocontent" in path.name or (fmt in ("langgraph", "crewai", "n8n") and path.name.count(".") > 1):
                continue
            n += len(reader(fmt)(path.read_bytes(), str(path)))
            tally_file(tally, str(path), fmt)  # as `luckrate suggest` reads it: runs, and tool definitions
        proposals, _ = propose(tally)
        priv = {e.tool for p in proposals for e in p.privileged}
        untr = {e.tool for p in proposals for e in p.untrusted}
        pp, pr, _ = prf(priv, set(SPEC["privileged"]))
        pplus = prf(priv, set(SPEC["privileged"]) | set(SPEC["forbidden"]))[0]
        up, ur, _ = prf(untr, set(SPEC["untrusted"]))
        print(
            f"{pattern:48} {n:4}  {_f(pp):>12} {_f(pplus):>6} {_f(pr):>6}  {_f(up):>11} {_f(ur):>6}  "
            f"privileged {sorted(priv)} untrusted {sorted(untr)}"
        )


def memory_table(runs: list) -> None:
    """What the one pass holds: the tally's memory after reading the dev set once, twice and four times
    (the same runs again: a longer day of the same agents), and after runs calling 1,000 to 100,000
    distinct tool names (built here: one call each). Ratios against the first row of each block."""
    from luckrate.core.step import Step, Trajectory

    print("\n## Memory: the tally after more traffic (tracemalloc, KiB held after the pass)\n")
    print(f"{'input':44} {'runs':>7} {'KiB':>9} {'ratio':>6}")
    trajs = [traj for _, traj in runs]
    base = None
    for k in (1, 2, 4):
        kib = _held(lambda tally, k=k: [tally.add(t) for _ in range(k) for t in trajs])
        base = base or kib
        print(f"{f'dev set x{k}':44} {k * len(trajs):7} {kib:9.0f} {kib / base:6.2f}")
    base = None
    for names in (1_000, 10_000, 100_000):
        synthetic = [Trajectory(str(i), (Step(0, f"tool_{i}", {"q": i}, "ok"),), output_ok=True) for i in range(names)]
        kib = _held(lambda tally, runs=synthetic: [tally.add(t) for t in runs])
        base = base or kib
        print(f"{f'{names:,} distinct tool names':44} {names:7} {kib:9.0f} {kib / base:6.2f}")
    print("(names past the 1,000 tracked are remembered only to count them, up to 100,000)")


def _held(fill) -> float:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    tally = Tally()
    fill(tally)
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del tally
    return current / 1024


def against(spec_path: str, fmt: str, files: list[str]) -> None:
    """Any recorded runs against any hand-written spec: precision and recall per list and agent, and
    taint graded with the proposed spec scored against taint graded with the hand-written one (the
    hand-written verdicts taken as truth: no labels needed)."""
    from luckrate.core.spec import spec_for

    tally, notes = Tally(), []
    for path in files:
        notes += tally_file(tally, path, fmt)
    proposals, more = propose(tally)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "proposed.py"
        out.write_text(render(proposals, notes + more))
        proposed = load_specs(out)
    hand = load_specs(spec_path)
    print(f"\n## {len(files)} files against {spec_path}\n")
    print(f"{'agent':20} {'list':10} {'P':>6} {'R':>6} {'R seen':>6}  missed / beyond")
    for p in proposals:
        spec = spec_for(hand, p.agent)
        if spec is None:
            print(f"{p.agent!s:20} no hand-written spec")
            continue
        seen = {t for t, calls, _ in p.tools if calls}
        for key, got in (("privileged", {e.tool for e in p.privileged}), ("untrusted", {e.tool for e in p.untrusted})):
            truth = set(getattr(spec, key))
            pr, r, _ = prf(got, truth)
            print(
                f"{p.agent!s:20} {key:10} {_f(pr):>6} {_f(r):>6} {_f(prf(got, truth & seen)[1]):>6}  "
                f"{sorted(truth - got)} / {sorted(got - truth)}"
            )
    c = Counter()
    for path in files:
        for traj in reader(fmt)(Path(path).read_bytes(), path):
            want = any(v.check == "taint" for v in grade(traj, spec_for(hand, traj.agent)).violations)
            flag = any(v.check == "taint" for v in grade(traj, spec_for(proposed, traj.agent)).violations)
            c["tp" if want and flag else "fp" if flag else "fn" if want else "tn"] += 1
    p_, r_, f_ = _prf(c)
    print(
        f"\ntaint, proposed vs hand-written verdicts over {sum(c.values())} runs: P {_f(p_)} R {_f(r_)} F1 {_f(f_)} "
        f"({c['tp'] + c['fn']} runs tainted under the hand-written spec)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=1, metavar="N", help="read every Nth run of the dev set only")
    parser.add_argument(
        "--against",
        metavar="SPEC",
        help="score FILEs (recorded runs) against this hand-written spec instead of the dev set",
    )
    parser.add_argument("--format", default="trajectory", help="the FILEs' format (as luckrate grade)")
    parser.add_argument("files", nargs="*", metavar="FILE")
    args = parser.parse_args()
    if args.against:
        against(args.against, args.format, args.files)
        return
    tally, runs = dev_set(args.sample)
    suites = detection.SUITES
    list_table(tally, suites)
    names_only_table(runs)
    taint_table(tally, runs)
    captures_table()
    if args.sample == 1:
        memory_table(runs)
    else:
        print("\n(memory: run without --sample)")


if __name__ == "__main__":
    main()
