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
    "Spec": "luckrate.core.spec",
    "InvalidSpec": "luckrate.core.spec",
    "load_specs": "luckrate.core.spec_loader",
    "spec_from_dict": "luckrate.core.spec_loader",
    "spec_for": "luckrate.core.spec",
    # runs and their grades
    "Trajectory": "luckrate.core.step",
    "Step": "luckrate.core.step",
    "Message": "luckrate.core.step",
    "Violation": "luckrate.core.violation",
    "grade": "luckrate.core.grade",
    "RunGrade": "luckrate.core.grade",
    "gate": "luckrate.core.gate",
    "GateResult": "luckrate.core.gate",
    "LuckRate": "luckrate.core.metric",
    # the suite runner (k runs per case, in pytest)
    "Suite": "luckrate.suite",
    "SuiteResult": "luckrate.suite",
    # readers: a framework's output or a capture -> Trajectory
    "InvalidInput": "luckrate.adapters",
    "trajectory_from_messages": "luckrate.adapters.langgraph",
    "read_langgraph": "luckrate.adapters.langgraph",
    "trajectory_from_events": "luckrate.adapters.crewai",
    "read_crewai": "luckrate.adapters.crewai",
    "read_n8n": "luckrate.adapters.n8n",
    "trajectory_from_dict": "luckrate.adapters.trajectory",
    "trajectory_to_dict": "luckrate.adapters.trajectory",
    "read_trajectories": "luckrate.adapters.trajectory",
    "read_otlp": "luckrate.adapters.otlp",
    "read_otlp_json": "luckrate.adapters.otlp",
    "read_otlp_files": "luckrate.adapters.otlp",
    "OutputRule": "luckrate.adapters.otlp",
}
"""Public name -> the module that defines it."""

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
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
