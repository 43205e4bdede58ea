"""``luckrate suggest``: a first spec proposed from recorded runs (stdlib only, streaming, deterministic).

    tally = Tally()
    for run in runs:          # any iterable of Trajectory: one pass, bounded state
        tally.add(run)
    proposals, notes = propose(tally)
    print(render(proposals, notes))

Modules: signals (what a name, description, argument or result says), tally (the one pass), propose
(the decisions, with their reasons), render (the spec file, and ``compare`` for ``--check``).
"""

from luckrate.core.suggest.propose import Entry, Proposal, Rule, Thresholds, propose
from luckrate.core.suggest.render import compare, render
from luckrate.core.suggest.tally import Tally, tool_definitions

__all__ = ["Entry", "Proposal", "Rule", "Tally", "Thresholds", "compare", "propose", "render", "tool_definitions"]
