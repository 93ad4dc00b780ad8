"""The suite catches hand-written buggy servers (not reference flags) at the first turn where their bug can show."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.texts import change_prompt
from staminad.suite.generate import generate_suite
from staminad.suite.history import History, turn_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite
from tests.suite.heldout.servers import SERVERS

pytestmark = pytest.mark.slow  # 3-7 s of CPU per held-out server: turns until each is caught

SEEDS = (0, 1, 2)
# Seeds whose first 40 turns reach the feature at all (rare ones: a `== false` guard on a nullable
# field, a sum guard over a nullable field, a quantified guard); picked anew when the generator's draws change.
SEEDS_FOR = {"null-equals-false": (10, 17, 24), "sum-propagates-null": (5, 13, 19), "quantifier-first-item": (3, 5, 8)}
TURNS = 40


def _first_turns(name: str, seed: int) -> tuple[int | None, int | None]:
    """(first turn the state can show the bug, first turn the suite fails the server), up to TURNS."""
    _, cls, can_show = SERVERS[name]
    scenario = generate(seed, ScenarioParams(turns=TURNS))
    state = scenario.initial
    history_: History | None = None
    for turn in range(TURNS + 1):
        if turn:
            changes = scenario.turns[turn - 1]
            _, after = change_prompt(changes, state)
            history_ = turn_history(history_, state, changes, after)
            state = after
        shows = can_show(state)
        config: dict[str, Any] = {"schema": msgspec.to_builtins(state)}
        result = asyncio.run(run_suite(generate_suite(state, seed, turn, history_), AppTransport(cls(config))))
        if shows or not result.passed:
            return (turn if shows else None), (turn if not result.passed else None)
    return None, None


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_heldout_server_is_caught_at_the_first_turn_it_can_show(name: str) -> None:
    """In every seed, the held-out server passes until its bug can show and fails exactly then."""
    seeds = SEEDS_FOR.get(name, SEEDS)
    outcomes = {seed: _first_turns(name, seed) for seed in seeds}
    assert any(shows is not None for shows, _ in outcomes.values()), f"{name} never exercised in {seeds}"
    wrong = {seed: o for seed, o in outcomes.items() if o[0] != o[1]}
    assert not wrong, f"{name}: (exercisable, caught) per seed {wrong}"
