"""Suite generation: deterministic, complete labelling, and coverage of every kind of rule."""

from __future__ import annotations

import pytest

from staminad.bench.readme import RULES
from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.model import CATEGORIES

SCENARIO = generate(3, ScenarioParams(turns=40))


def test_suite_is_deterministic() -> None:
    """The same state, seed, turn and history give the same suite."""
    state, history = state_and_history(SCENARIO, 25)
    assert generate_suite(state, 3, 25, history) == generate_suite(state, 3, 25, history)


def test_seed_and_turn_change_the_data() -> None:
    """Different (seed, turn) pairs draw different test data for the same state."""
    state, _ = state_and_history(SCENARIO, 10)
    assert generate_suite(state, 3, 10) != generate_suite(state, 4, 10)


@pytest.mark.parametrize("turn", [0, 1, 10, 40])
def test_every_test_has_a_unique_name_a_category_and_a_stated_rule(turn: int) -> None:
    """Names are unique, categories come from the taxonomy and every rule id exists in the README."""
    state, history = state_and_history(SCENARIO, turn)
    suite = generate_suite(state, 3, turn, history)
    names = [t.name for t in suite.tests]
    assert len(names) == len(set(names))
    assert all(t.category in CATEGORIES for t in suite.tests)
    assert all(t.rule in RULES for t in suite.tests)
    assert all(t.steps for t in suite.tests)


def test_suite_covers_each_kind_of_rule_over_a_trajectory() -> None:
    """Across a trajectory the suites cite every README rule that HTTP can observe."""
    seen: set[str] = set()
    for turn in range(41):
        state, history = state_and_history(SCENARIO, turn)
        seen |= {t.rule for t in generate_suite(state, 3, turn, history).tests}
    unobservable = {"run-script", "language", "spec-file", "pkill", "automation", "json", "crud", "guards",
                    "effects", "delete-entity"}
    assert set(RULES) - unobservable <= seen, set(RULES) - unobservable - seen


def test_history_tests_appear_after_renames_and_deletions() -> None:
    """Retired endpoints and removed fields get tests that expect them gone."""
    names: set[str] = set()
    for turn in range(1, 41):
        state, history = state_and_history(SCENARIO, turn)
        names |= {t.name for t in generate_suite(state, 3, turn, history).tests}
    assert any(n.startswith("gone_endpoint_") for n in names)
    assert any(n.endswith("_gone") for n in names)


def test_history_survives_a_rename_cycle_within_one_turn() -> None:
    """Renaming A->B then B->A in one turn is legal; the history still resolves names (no endless lookup)."""
    from staminad.bench.changes import DeleteField, RenameEntity, transition
    from staminad.suite.history import turn_history

    state = SCENARIO.initial
    a, b = state.entities[0].name, state.entities[0].name + "Tmp"
    field = state.entities[0].fields[0].name
    changes = [DeleteField(a, field), RenameEntity(a, b), RenameEntity(b, a)]
    after = transition(state, changes)
    history = turn_history(None, state, changes, after)
    assert history.removed_fields == ((a, field, "deleted"),)
    assert history.retired_endpoints == (b.lower(),)
