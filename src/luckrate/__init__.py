"""luckrate: grade the trajectory of an AI agent (the tool calls it really made) against a spec.

The public API is ``__all__``; import from ``luckrate`` and nowhere else (every other module may change)::

    from luckrate import Suite, grade, load_specs, spec_for, trajectory_from_messages

Names load on first use (PEP 562), so ``import luckrate`` costs nothing and a user of one reader does
not import the others.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_WHERE: dict[str, str] = {
    # the spec
    "Spec": ".core.spec",
    "InvalidSpec": ".core.spec",
    "load_specs": ".core.spec_loader",
    "spec_from_dict": ".core.spec_loader",
    "spec_for": ".core.spec",
    # runs and their grades
    "Trajectory": ".core.step",
    "Step": ".core.step",
    "Message": ".core.step",
    "Violation": ".core.violation",
    "grade": ".core.grade",
    "RunGrade": ".core.grade",
    "gate": ".core.gate",
    "GateResult": ".core.gate",
    "LuckRate": ".core.metric",
    # the suite runner (k runs per case, in pytest)
    "Suite": ".suite",
    "SuiteResult": ".suite",
    # readers: a framework's output or a capture -> Trajectory
    "InvalidInput": ".adapters",
    "trajectory_from_messages": ".adapters.langgraph",
    "read_langgraph": ".adapters.langgraph",
    "trajectory_from_events": ".adapters.crewai",
    "read_crewai": ".adapters.crewai",
    "read_n8n": ".adapters.n8n",
    "trajectory_from_dict": ".adapters.trajectory",
    "trajectory_to_dict": ".adapters.trajectory",
    "read_trajectories": ".adapters.trajectory",
    "read_otlp": ".adapters.otlp",
    "read_otlp_json": ".adapters.otlp",
    "read_otlp_files": ".adapters.otlp",
    "OutputRule": ".adapters.otlp",
}
"""Public name -> the module that defines it, relative to this package."""

__all__ = [
    "GateResult",
    "InvalidInput",
    "InvalidSpec",
    "LuckRate",
    "Message",
    "OutputRule",
    "RunGrade",
    "Spec",
    "Step",
    "Suite",
    "SuiteResult",
    "Trajectory",
    "Violation",
    "gate",
    "grade",
    "load_specs",
    "read_crewai",
    "read_langgraph",
    "read_n8n",
    "read_otlp",
    "read_otlp_files",
    "read_otlp_json",
    "read_trajectories",
    "spec_for",
    "spec_from_dict",
    "trajectory_from_dict",
    "trajectory_from_events",
    "trajectory_from_messages",
    "trajectory_to_dict",
]

if TYPE_CHECKING:
    from luckrate.adapters import InvalidInput
    from luckrate.adapters.crewai import read_crewai, trajectory_from_events
    from luckrate.adapters.langgraph import read_langgraph, trajectory_from_messages
    from luckrate.adapters.n8n import read_n8n
    from luckrate.adapters.otlp import OutputRule, read_otlp, read_otlp_files, read_otlp_json
    from luckrate.adapters.trajectory import read_trajectories, trajectory_from_dict, trajectory_to_dict
    from luckrate.core.gate import GateResult, gate
    from luckrate.core.grade import RunGrade, grade
    from luckrate.core.metric import LuckRate
    from luckrate.core.spec import InvalidSpec, Spec, spec_for
    from luckrate.core.spec_loader import load_specs, spec_from_dict
    from luckrate.core.step import Message, Step, Trajectory
    from luckrate.core.violation import Violation
    from luckrate.suite import Suite, SuiteResult


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'luckrate' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
