"""The oracle gate run in CI: on 10 scenarios x 100 turns the reference passes every turn and each mutant
is caught, with the failure category it should produce."""

from __future__ import annotations

import os

from staminad.bench.scenario import ScenarioParams
from staminad.validate import ALL_AGENTS, scenarios_for, validate, verdicts


def test_reference_passes_and_every_mutant_is_caught_with_its_category() -> None:
    """`staminad validate --seeds 0-9 --turns 100`: reference 100%, every exercised mutant caught, right category."""
    params = ScenarioParams(turns=100)
    outcomes = validate(scenarios_for(list(range(10)), params, None), "python", ALL_AGENTS, os.cpu_count() or 1)
    table = verdicts(outcomes, params.turns)
    assert [v.agent for v in table] == ALL_AGENTS
    bad = [f"{v.agent}: {v.summary}" for v in table if not v.ok]
    assert not bad, bad
    ref = table[0]
    assert ref.caught == 0 and ref.scenarios == 10
    assert all(v.caught >= 1 for v in table[1:]), [v.agent for v in table[1:] if v.caught == 0]
