"""Held-out buggy servers (not in the mutant catalogue) are caught at the first turn that can show the bug."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference.agent import step
from staminad.suite.generate import generate_suite
from staminad.suite.history import turn_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite
from tests.suite.heldout_crud.servers import HELDOUT, Heldout

SEEDS = (0, 1, 2, 3)
TURNS = 12


def _first_turns(h: Heldout, seed: int) -> tuple[int | None, int | None, str]:
    """(first exercisable turn, first failing turn, first failure) over one scenario."""
    scenario = generate(seed, ScenarioParams(turns=TURNS))
    state: Any = scenario.initial
    history: Any = None
    memory: dict[str, Any] = {}
    spec, exercised = render_spec(state), None
    for turn in range(TURNS + 1):
        changes: Any = ()
        if turn == 0:
            prompt = initial_prompt("python")
        else:
            changes = scenario.turns[turn - 1]
            prompt, after = change_prompt(changes, state)
            history = turn_history(history, state, changes, after)
            state = after
        if exercised is None and h.exercised(state, changes):
            exercised = turn
        memory, config = step(memory, prompt, spec, None, False)
        result = asyncio.run(run_suite(generate_suite(state, seed, turn, history), AppTransport(h.app(config))))
        if not result.passed:
            return exercised, turn, f"{result.failures[0].name}: {result.failures[0].message}"
    return exercised, None, ""


@pytest.mark.parametrize("heldout", HELDOUT, ids=lambda h: h.app.__name__)
def test_heldout_server_is_caught_at_its_first_exercisable_turn(heldout: Heldout) -> None:
    """In every seed the bug is caught exactly at the first turn whose design can show it, and some seed can."""
    seen = []
    for seed in SEEDS:
        exercised, caught, why = _first_turns(heldout, seed)
        assert caught == exercised, f"seed {seed}: exercisable from {exercised}, caught at {caught} ({why})"
        seen.append(exercised)
    assert any(t is not None for t in seen)
