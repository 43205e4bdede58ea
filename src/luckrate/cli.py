"""The `luckrate` command: grade, convert, suggest, serve, demo.

Exit codes: 0 the gate passed (or the command succeeded), 1 the gate failed, 2 bad input or usage.
Bad input is one line on stderr naming the file (and line, trace, span or message) and the problem.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from luckrate.adapters import InvalidInput
from luckrate.adapters.formats import FORMATS, GROUPS_TRACES, detect, reader
from luckrate.adapters.trajectory import trajectory_to_dict
from luckrate.core.gate import gate
from luckrate.core.checks.grounding import explain
from luckrate.core.grade import RunGrade, grade, resolved, traced
from luckrate.core.metric import LuckRate
from luckrate.core.spec import InvalidSpec, Spec, spec_for
from luckrate.core.spec_loader import load_specs
from luckrate.core.step import Trajectory
from luckrate.core.suggest import Tally, Thresholds, compare, propose, render
from luckrate.progress import Progress
from luckrate.report import SKIPPED_REASON, as_json, as_text

EXIT_OK, EXIT_GATE_FAILED, EXIT_BAD_INPUT = 0, 1, 2
OTLP_FORMATS = ("otlp", "otlp-json")
RUN_MODES = ("trace", "links", "conversation")
"""``--runs-by`` values (adapters/otlp/runs.py MODES; named here so parsing imports no OTLP code)."""


class UsageError(Exception):
    """Bad input that is not an adapter's: a missing file, a run without a spec."""


def _read_all(
    paths: Sequence[str],
    fmt: str | None,
    logs: Sequence[str] = (),
    skipped: dict[str, int] | None = None,
    runs_by: str | None = None,
    assembly: dict[str, int] | None = None,
) -> list[Trajectory]:
    """Every file's runs; ``logs`` files join the traces of the trace files (OTLP formats: read together);
    ``skipped`` gets, per file, how many traces it held that are no run (an HTTP request's trace in a
    service's export); ``assembly`` adds up what grouping traces into runs did (``runs_by``: OTLP only).
    ``fmt`` None: told by the files' content."""
    fmt = fmt or _detect_all(paths)
    if runs_by is not None and fmt not in GROUPS_TRACES:
        raise UsageError(f"--runs-by applies to OTLP input (--format {' or '.join(sorted(GROUPS_TRACES))})")
    if fmt in OTLP_FORMATS:
        from luckrate.adapters.otlp import read_otlp_files
        from luckrate.adapters.otlp.runs import DEFAULT_MODE

        found = read_otlp_files(
            [(_read(p), p) for p in paths],
            [(_read(p), p) for p in logs],
            json=fmt == "otlp-json",
            runs_by=runs_by or DEFAULT_MODE,
        )
        for path, n in found.skipped_in.items():
            if skipped is not None:
                skipped[path] = skipped.get(path, 0) + n
        for key, n in found.assembly.items():
            if assembly is not None:
                assembly[key] = assembly.get(key, 0) + n
        return list(found)
    if logs:
        raise UsageError(f"--logs needs --format {' or '.join(OTLP_FORMATS)}")
    read = reader(fmt)
    runs: list[Trajectory] = []
    for path in paths:
        runs.extend(read(_read(path), path))
    return runs


def _detect_all(paths: Sequence[str]) -> str:
    """The one format every file is in, told by content (``--format`` not given)."""
    found = {path: detect(_read(path), path) for path in paths}
    if len(set(found.values())) > 1:
        listed = ", ".join(f"{path} ({fmt})" for path, fmt in found.items())
        raise UsageError(f"the files are in different formats: {listed}; give each format its own command")
    return next(iter(found.values()))


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror})") from None


def _grade_all(runs: list[Trajectory], specs: dict[str, Spec]) -> list[RunGrade]:
    grades = []
    with Progress(len(runs), "grading") as progress:
        for traj in runs:
            spec = spec_for(specs, traj.agent)
            if spec is None:
                raise UsageError(f"run {traj.id}: no spec for agent {traj.agent!r} and no '*' fallback")
            grades.append(grade(traj, spec))
            progress.advance()
    return grades


def cmd_grade(args: argparse.Namespace) -> int:
    specs = load_specs(args.spec)
    skipped: dict[str, int] = {}
    assembly: dict[str, int] = {}
    runs = _read_all(args.files, args.format, args.logs or (), skipped, args.runs_by, assembly)
    grades = _grade_all(runs, specs)
    luck, result = LuckRate.of(grades), gate(grades)
    explained = _explain_all(runs, specs) if args.explain else None
    if args.html:
        _write_html(args.html, runs, grades, specs, str(luck), result.reasons, args.format)
    report = as_json if args.json else as_text
    _emit(report(grades, luck, result, explained, skipped, assembly))
    return EXIT_GATE_FAILED if result.failed else EXIT_OK


def _write_html(
    path: str,
    runs: list[Trajectory],
    grades: list[RunGrade],
    specs: dict[str, Spec],
    luck: str,
    reasons: Sequence[str],
    fmt: str,
) -> None:
    """``--html``: the run viewer's summary and run pages in one self-contained file (no script, nothing
    fetched: it opens offline, from a CI artifact)."""
    import time

    from luckrate.view import model
    from luckrate.view import render as view

    now = time.time()
    pages = []
    for i, (traj, g) in enumerate(zip(runs, grades)):
        spec = spec_for(specs, traj.agent)
        assert spec is not None, "_grade_all refused runs without a spec"
        pages.append(model.detail(g, traj, spec, (traj.id,), seq=i + 1, graded_at=now, output_from=f"the {fmt} input"))
    text = view.report(pages, model.luck_by_agent(pages), luck, list(reasons))
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--html {path}: cannot write ({e.strerror})") from None


def _explain_all(runs: list[Trajectory], specs: dict[str, Spec]) -> list[list[dict]]:
    """Per run, every traced argument with its sources and the reason for its verdict (``--explain``)."""
    out = []
    for traj in runs:
        spec = spec_for(specs, traj.agent)
        if spec is None:  # _grade_all refused such a run before --explain runs
            raise UsageError(f"run {traj.id}: no spec for agent {traj.agent!r} and no '*' fallback")
        out.append(explain(traced(resolved(traj, spec), spec), spec) if traj.content else [])
    return out


def cmd_convert(args: argparse.Namespace) -> int:
    skipped: dict[str, int] = {}
    for traj in _read_all(args.files, args.format, args.logs or (), skipped, args.runs_by):
        if not _emit(json.dumps(trajectory_to_dict(traj), ensure_ascii=False)):
            break
    if skipped:  # stdout holds only runs; say on stderr what was left out
        where = ", ".join(f"{path} ({n})" for path, n in skipped.items())
        print(f"luckrate: skipped {sum(skipped.values())} traces with {SKIPPED_REASON}: {where}", file=sys.stderr)
    return EXIT_OK


def _emit(text: str) -> bool:
    """Print a line; False once the reader has gone (``luckrate convert ... | head``): stop quietly, as
    well-behaved CLIs do, instead of a BrokenPipeError traceback. The exit code stays the command's."""
    try:
        print(text, flush=True)
        return True
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return False


def cmd_suggest(args: argparse.Namespace) -> int:
    """Read every FILE, run by run, into a bounded tally; print the proposed spec (or, with ``--check``,
    what the traffic suggests that the spec does not say: exit 1 when anything). With OTLP, the logs files
    (``--logs``, or found among FILEs) are read first, since their records join the traces of the rest: a
    trace file is then read a second time to tally it (files are not held, to keep memory bounded)."""
    tally, notes = Tally(), []
    files, events = list(args.files), None
    fmt = args.format or _detect_all(files)
    if fmt in OTLP_FORMATS:
        from luckrate.adapters.otlp.readers import is_logs_file, log_events

        json_ = fmt == "otlp-json"
        logs = [(_read(p), p) for p in args.logs or ()]
        for path in list(files):
            data = _read(path)
            if is_logs_file(data, path, json_):
                logs.append((data, path))
                files.remove(path)
        events = log_events(logs, json_) if logs else None
    elif args.logs:
        raise UsageError(f"--logs needs --format {' or '.join(OTLP_FORMATS)}")
    for path in files:
        notes += tally_file(tally, path, fmt, events)
    if not tally.agents:
        raise UsageError(
            f"no agent runs in {', '.join(args.files)}: nothing to suggest from" + (f" ({notes[0]})" if notes else "")
        )
    proposals, more = propose(tally, Thresholds(fields=args.fields))
    notes += more
    text = render(proposals, notes, args.files)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as e:
            raise UsageError(f"{args.output}: cannot write ({e.strerror})") from None
    for note in notes + [f"agent {p.agent!r}: {n}" for p in proposals for n in p.notes]:
        print(f"luckrate: note: {note}", file=sys.stderr)
    if args.check is None:
        if not args.output:
            print(text, end="")
        return EXIT_OK
    differences = compare(proposals, load_specs(args.check))
    print("\n".join(differences) if differences else f"{args.check}: agrees with the traffic")
    return EXIT_GATE_FAILED if differences else EXIT_OK


def tally_file(tally: Tally, path: str, fmt: str, events: dict | None = None) -> list[str]:
    """Fold one file's runs into ``tally`` (for OTLP, with the tool definitions its traces carry);
    return notes on what it held that made no run. A trace with no agent, model or tool span is
    counted in a note, not an error: a day of traffic holds other traces too."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror})") from None
    notes: list[str] = []
    definitions: dict[str, dict[str, tuple[str | None, frozenset[str]]]] = {}
    if fmt in ("otlp", "otlp-json"):
        from luckrate.adapters.otlp.definitions import definitions_from_file
        from luckrate.adapters.otlp.readers import read_otlp_runs

        runs, skipped = read_otlp_runs(data, path, fmt, logs=events)
        if skipped:
            notes.append(
                f"{len(skipped):,} trace{'s' if len(skipped) != 1 else ''} made no run, skipped "
                f"(first: {_one_line(skipped[0])})"
            )
        definitions = definitions_from_file(data, fmt) if runs else {}
    else:
        runs = reader(fmt)(data, path)
    if not runs:
        notes.append(f"{path}: no agent runs")
    for traj in runs:
        tally.add(traj)
        for tool, (description, params) in sorted(definitions.get(traj.id, {}).items()):
            tally.describe(traj.agent, tool, description, params)
    return notes


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default=None,
        help="input format (default: told by content: otlp for binary OTLP, otlp-json for OTLP/JSON, "
        "else trajectory, luckrate's JSON / JSON Lines form; name the others)",
    )
    parser.add_argument(
        "--logs",
        action="append",
        metavar="FILE",
        help="with --format otlp or otlp-json: an OTLP logs file (ExportLogsServiceRequest) whose "
        "records join the traces of FILEs; repeatable. A logs file among FILEs is found by "
        "its content too",
    )
    parser.add_argument(
        "--runs-by",
        choices=RUN_MODES,
        default=None,
        help="OTLP input: which traces make one run: trace (each trace), links (traces tied by "
        "span links; the default) or conversation (also traces sharing gen_ai.conversation.id)",
    )
    parser.add_argument("files", nargs="+", metavar="FILE")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="luckrate", description="Grade AI-agent trajectories against a spec.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("grade", help="grade runs; exit 1 when the gate fails")
    p.add_argument("--spec", required=True, help="spec file: Python (SPEC / SPECS) or JSON")
    p.add_argument("--json", action="store_true", help="print the JSON report")
    p.add_argument(
        "--explain",
        action="store_true",
        help="show every traced argument: the forms looked up, where it was found, and why it is or is "
        'not ungrounded or taint (a "provenance" list per run in --json)',
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write FILE: one self-contained HTML page with the summary and every run (for CI artifacts)",
    )
    _add_format(p)
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("convert", help="print the trajectories read from FILEs as JSON Lines")
    _add_format(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("suggest", help="propose a spec (a Python file to review) from recorded runs")
    p.add_argument(
        "--check",
        metavar="SPEC",
        help="compare SPEC with what the traffic suggests instead: tools called but not declared, declared "
        "but never seen, privileged or untrusted candidates not declared (exit 1 when any)",
    )
    p.add_argument("-o", "--output", metavar="PATH", help="write the proposed spec to PATH (default: print it)")
    p.add_argument(
        "--fields",
        action="store_true",
        help="declare untrusted field by field where every sentence a tool returned sat in named fields "
        '(the dict form; other untrusted tools then get "*", their whole result)',
    )
    _add_format(p)
    p.set_defaults(func=cmd_suggest)

    _add_module(sub, "serve", ".service.app", "receive OTLP traces and logs, grade them, export metrics")
    _add_module(sub, "demo", ".demo", "send demo agent traces to an OTLP endpoint")
    return parser


def _add_module(sub, name: str, module: str, help: str) -> None:
    """A subcommand whose module (relative to this package) defines ``add_arguments(parser)`` and ``run(args) -> int``."""
    from importlib import import_module

    mod = import_module(module, __package__)
    p = sub.add_parser(name, help=help)
    mod.add_arguments(p)
    p.set_defaults(func=mod.run)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (InvalidInput, InvalidSpec, UsageError, FileNotFoundError) as e:
        print(f"luckrate: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _one_line(e: Exception) -> str:
    return "; ".join(line.strip() for line in str(e).splitlines() if line.strip())


if __name__ == "__main__":
    sys.exit(main())
