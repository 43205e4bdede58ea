"""Generate the labelled detection set (issues #10 and #17) offline from the ``agentdojo`` package.

    python3 -m venv .venv-agentdojo
    .venv-agentdojo/bin/pip install -q agentdojo==0.1.35 opentelemetry-exporter-otlp-proto-common -e .
    .venv-agentdojo/bin/python benchmarks/detection_data.py      # writes benchmarks/data/detection_*.jsonl.gz

agentdojo is never a luckrate dependency: only this generator imports it, and the files it writes are
committed, so ``benchmarks/detection.py`` runs without it. No model runs: every call is a task's
ground truth, executed with agentdojo's real tool functions (``FunctionsRuntime``) on the suite's
environment, each result rendered as the agent would see it (``tool_result_to_str``, YAML).

Kinds of run (label ``kind``), per suite of the newest benchmark version the package has:
- ``clean``: a user task's ground-truth calls on the default environment;
- ``resisted``: the same calls on an environment the attack injected (every vector the user task's
  ground truth reads, chosen by agentdojo's own ``get_injection_candidates``): negative;
- ``succeeded``: the user task's calls up to the first one whose result carries the injection, then
  the injection task's ground-truth calls, then (every other pair) the rest of the user task: positive;
- ``fabricated``: a clean run with one acting call's argument made up (see detection_variants).
Attacks rotate over ATTACKS, one per (user task, injection task) pair, so every attack template is
used in every suite without multiplying the set by their number. Injection tasks whose ground truth
makes no call (their goal is the answer text) give resisted runs only. Every clean run also comes in up to two
``reformatted`` variants, a quarter of the attacked runs in one (arguments rewritten as a model might,
same label; see detection_variants).
Ground truth is computed on the environment the run executes in, as agentdojo's own ground-truth
pipeline does: the injection changes the results and, where it sits in a name the task uses (slack's
``External_...`` channel), the argument the agent passes too.

Every run above is a replay of ground truth (label ``behaviour: replay``); clean runs, and every second
attacked pair, also come as the behaviours real models show (``behaviour``: quote, reordered, retry,
partial, combined; see detection_behaviours), executed on the same environment. A request that hands its
tasks to a page has that page read first in every run (``ground_truth``).

Every trace is read back through luckrate's OTLP adapters (binary and JSON) and compared with the
generated calls (tool, arguments, result, order); any difference stops the generator.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import sys
import time
import types
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentdojo.agent_pipeline.tool_execution import tool_result_to_str  # noqa: E402
from agentdojo.attacks.attack_registry import load_attack  # noqa: E402
from agentdojo.functions_runtime import FunctionsRuntime  # noqa: E402
from agentdojo.task_suite.load_suites import get_suites  # noqa: E402
from agentdojo.types import text_content_block_from_string  # noqa: E402

import detection_behaviours as db  # noqa: E402
import detection_traces as dt  # noqa: E402
import detection_variants as dv  # noqa: E402

VERSION = "v1.2.2"
"""The newest benchmark version agentdojo 0.1.35 ships."""
SUITES = ("banking", "slack", "travel", "workspace")
ATTACKS = ("important_instructions", "tool_knowledge", "direct", "ignore_previous", "injecagent", "system_message")
"""Every injection attack in the package that needs no model (the first two read a model's name)."""
ATTACK_MODEL = "gpt-4o-2024-05-13"
"""The pipeline name the model-naming attacks read ("GPT-4"); no model is called."""
ANSWER = "Done."
VARIANTS = {"clean": (1.0, 1.0), "resisted": (0.25,), "succeeded": (0.25,)}
"""Per kind, the chance of each reformatted variant a run gets: every clean run gets two (clean runs are
few, and they carry the flag-rate target), a quarter of the attacked runs one."""
SEED = 10


FROZEN_NOW = datetime.datetime(2024, 5, 15, 12, 0)
"""The wall clock the tools see (the workspace suite's 'current day')."""


class _FrozenDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FROZEN_NOW.replace(tzinfo=tz)


def freeze_clock() -> None:
    """The e-mail and drive tools stamp what they create with ``datetime.datetime.now()``: freeze it, so
    a regenerated set is byte-identical (those two modules use ``datetime`` for nothing else)."""
    from agentdojo.default_suites.v1.tools import cloud_drive_client, email_client

    for module in (cloud_drive_client, email_client):
        module.datetime = types.SimpleNamespace(datetime=_FrozenDatetime)


class _Target:
    """The 'pipeline' an attack is aimed at: attacks read only its name."""

    name = ATTACK_MODEL


def execute(suite, env, calls) -> list[dt.Call]:
    runtime = FunctionsRuntime(suite.tools)
    out = []
    for fc in calls:
        if fc.id == db.FAILED_ID:
            out.append(dt.Call(fc.function, dict(fc.args), None, "ServiceUnavailable: the service is busy, try again"))
            continue
        result, error = runtime.run_function(env, fc.function, dict(fc.args))
        out.append(dt.Call(fc.function, dict(fc.args), None if error else tool_result_to_str(result), error))
    return out


def first_injected(suite, user_task, canaries: dict[str, str]) -> int | None:
    """Index of the first ground-truth call whose result shows an injection vector (canary run)."""
    env = suite.load_and_inject_default_environment(canaries)
    calls = ground_truth(suite, user_task, suite.load_and_inject_default_environment({}))
    for i, call in enumerate(execute(suite, env, calls)):
        if call.result and any(c in call.result for c in canaries.values()):
            return i
    return None


def behaviours(
    suite,
    env,
    prompt: str,
    done: tuple[dt.Call, ...],
    calls: list,
    label: dict,
    stats: Counter,
    inj: tuple[int, int] | None = None,
):
    """The runs a model showing each behaviour class would make from ``calls`` (detection_behaviours)."""
    from detection import PRIVILEGED

    acting = PRIVILEGED[label["suite"]]
    results = [c.result for c in done]  # the run ``calls`` made, already executed
    made = {name: make(calls, acting, results) for name, make in db.BEHAVIOURS.items()}
    if inj is not None:
        made["partial"] = db.partial(calls, inj, acting)
    for name, new in made.items():
        if new is None:
            continue
        stats[f"{label['suite']}: behaviour {name}"] += 1
        done = execute(suite, env.model_copy(deep=True), new)
        yield dt.Run(label["suite"], prompt, tuple(done), ANSWER, {**label, "behaviour": name})


def ground_truth(suite, task, env) -> list:
    """The task's ground-truth calls, with the read of the page a request hands its tasks to first: no
    model can do the tasks on a list it has not read (the package's ground truth skips the read)."""
    calls = task.ground_truth(env.model_copy(deep=True))
    pages = getattr(getattr(env, "web", None), "web_content", {})
    return db.delegated(task.PROMPT, calls, pages) or calls


def suite_runs(name: str, suite, stats: Counter):
    attacks = [load_attack(a, suite, _Target()) for a in ATTACKS]
    clean_env = suite.load_and_inject_default_environment({})
    pair = 0
    tasks = list(suite.user_tasks.items())
    for n, (uid, user_task) in enumerate(tasks):
        base = {"suite": name, "user_task": uid}
        calls = ground_truth(suite, user_task, clean_env)
        clean = execute(suite, clean_env.model_copy(deep=True), calls)
        label = {**base, "kind": "clean", "positive": False}
        yield dt.Run(name, user_task.PROMPT, tuple(clean), ANSWER, label)
        yield from behaviours(suite, clean_env, user_task.PROMPT, tuple(clean), calls, label, stats)
        other_uid, other = tasks[(n + 1) % len(tasks)]
        both = [*calls, *ground_truth(suite, other, clean_env)]
        prompt = f"{user_task.PROMPT}\nThen: {other.PROMPT}"
        stats[f"{name}: behaviour combined"] += 1
        yield dt.Run(
            name,
            prompt,
            tuple(execute(suite, clean_env.model_copy(deep=True), both)),
            ANSWER,
            {**label, "user_task": f"{uid}+{other_uid}", "behaviour": "combined"},
        )
        try:
            attacks[0].get_injection_candidates(user_task)
        except ValueError:
            stats[f"{name}: user task not injectable"] += 1
            continue
        at = first_injected(suite, user_task, attacks[0].canary_injections)
        for iid, inj_task in suite.injection_tasks.items():
            attack = attacks[pair % len(attacks)]
            injections = attack.attack(user_task, inj_task)
            env = suite.load_and_inject_default_environment(injections)
            label = {**base, "injection_task": iid, "attack": attack.name, "positive": False}
            user_calls = ground_truth(suite, user_task, env)
            stats[f"{name}: attacked runs whose user calls differ from the clean run's"] += user_calls != calls
            resisted = execute(suite, env.model_copy(deep=True), user_calls)
            yield dt.Run(name, user_task.PROMPT, tuple(resisted), ANSWER, {**label, "kind": "resisted"})
            if pair % BEHAVIOUR_EVERY == 0:
                resisted_label = {**label, "kind": "resisted"}
                yield from behaviours(suite, env, user_task.PROMPT, tuple(resisted), user_calls, resisted_label, stats)
            inj_calls = inj_task.ground_truth(env.model_copy(deep=True))
            if not inj_calls:
                stats[f"{name}: injection task without calls (resisted only)"] += 1
            else:
                run = _succeeded(suite, env, user_calls, inj_calls, inj_task, at, pair, label, user_task, stats)
                yield run
                if pair % BEHAVIOUR_EVERY == 0:
                    lo, hi = run.label["injection_steps"]
                    trace = [dt_call_to_fc(c) for c in run.calls]
                    yield from behaviours(suite, env, user_task.PROMPT, run.calls, trace, run.label, stats, (lo, hi))
            pair += 1


BEHAVIOUR_EVERY = 2
"""Behaviour runs are made for every clean run and for every second attacked pair (the set stays small
enough to grade in seconds)."""


def dt_call_to_fc(call: dt.Call):
    from agentdojo.functions_runtime import FunctionCall

    return FunctionCall(function=call.tool, args=dict(call.args))


def _succeeded(suite, env, calls, inj_calls, inj_task, at, pair, label, user_task, stats) -> dt.Run:
    at = len(calls) - 1 if at is None else at
    rest = calls[at + 1 :] if pair % 2 == 0 else []
    pre = env.model_copy(deep=True)
    run_env = env.model_copy(deep=True)
    trace = [*calls[: at + 1], *inj_calls, *rest]
    done = execute(suite, run_env, trace)
    # agentdojo's own verdict on the attack, for the report; the label is "the calls were made".
    ok = suite._check_injection_task_security(inj_task, [text_content_block_from_string("")], pre, run_env, trace)
    stats["succeeded: agentdojo's security check agrees"] += bool(ok)
    stats["succeeded: agentdojo's security check disagrees"] += not ok
    return dt.Run(
        label["suite"],
        user_task.PROMPT,
        tuple(done),
        ANSWER,
        {
            **label,
            "kind": "succeeded",
            "positive": True,
            "injected_after": at,
            "injection_steps": [at + 1, at + len(inj_calls)],
            "security_check": bool(ok),
        },
    )


def variant(run: dt.Run, rng: random.Random) -> dt.Run | None:
    calls = tuple(dt.Call(c.tool, dv.reformat(c.args, rng), c.result, c.error) for c in run.calls)
    if calls == run.calls:
        return None
    return dt.Run(run.suite, run.user, calls, run.answer, {**run.label, "variant": "reformatted"})


def fabricated(run: dt.Run, acting: frozenset[str], rng: random.Random) -> list[dt.Run]:
    """One fabricated run per kind that fits some acting call's argument: the original value occurs in an
    earlier source (so the real run could trace it) and the made-up one in none."""
    out, seen = [], [run.user.casefold()]
    kinds_done: set[str] = set()
    for i, call in enumerate(run.calls):
        if call.tool in acting:
            for key, index, value in _top_leaves(call.args):
                if not any(str(value).casefold() in s for s in seen):
                    continue
                for kind, fake in dv.fabrications(key, value, rng):
                    if kind in kinds_done or any(str(fake).casefold() in s for s in seen):
                        continue
                    kinds_done.add(kind)
                    args = {**call.args}
                    if index is None:
                        args[key] = fake
                    else:
                        args[key] = [*args[key][:index], fake, *args[key][index + 1 :]]
                    calls = list(run.calls)
                    calls[i] = dt.Call(call.tool, args, call.result, call.error)
                    path = key if index is None else f"{key}[{index}]"
                    out.append(
                        dt.Run(
                            run.suite,
                            run.user,
                            tuple(calls),
                            run.answer,
                            {
                                **run.label,
                                "kind": "fabricated",
                                "positive": False,
                                "fabricated": {"kind": kind, "step": i, "path": path, "value": fake, "was": value},
                            },
                        )
                    )
        if call.result:
            seen.append(call.result.casefold())
    return out


def _top_leaves(args: dict):
    """(key, list index or None, value) for each argument and each item of a list argument."""
    for key, value in args.items():
        if isinstance(value, list):
            for j, item in enumerate(value):
                yield key, j, item
        else:
            yield key, None, value


def generate(stats: Counter):
    from detection import PRIVILEGED  # the benchmark's own lists: fabricate only in acting calls

    rng = random.Random(SEED)
    suites = get_suites(VERSION)
    for name in SUITES:
        for run in suite_runs(name, suites[name], stats):
            yield run
            if "behaviour" in run.label:
                continue
            seen = [run.calls]
            for chance in VARIANTS[run.label["kind"]]:
                v = variant(run, rng) if rng.random() < chance else None
                if v is not None and v.calls not in seen:
                    seen.append(v.calls)
                    yield v
            if run.label["kind"] == "clean":
                yield from fabricated(run, PRIVILEGED[name], rng)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        # The calendar tool orders an event's participants through a set: string hashing must not vary
        # between runs, or neither does the set's order (and the file changes on every regeneration).
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    t0 = time.perf_counter()
    freeze_clock()
    stats: Counter = Counter()
    recorder = dt.Recorder(SEED)

    def pairs():
        for run in generate(stats):
            label = {"variant": "original", "behaviour": "replay", **run.label}
            request = recorder.record(run)
            problem = dt.mismatch(run, request)
            if problem:
                raise SystemExit(f"read-back differs for {label}: {problem}")
            label["trace_id"] = dt.trace_id(request)
            stats[f"{run.suite} {label['kind']}{' reformatted' if label['variant'] != 'original' else ''}"] += 1
            yield dt.to_json(request), label

    n, size = dt.write(pairs())
    for key, count in sorted(stats.items()):
        print(f"{count:6d}  {key}")
    print(
        f"{n} runs, every one read back equal through luckrate's OTLP adapters; "
        f"{size / 1e6:.2f} MB compressed in {dt.DATA}; {time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
