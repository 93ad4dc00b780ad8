"""Suite generation: deterministic, complete labelling, and coverage of every kind of rule."""

from __future__ import annotations

import pytest

from protocol.kinds import CATEGORIES
from staminad.bench.readme import RULES
from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history

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
    unobservable = {
        "run-script",
        "language",
        "spec-file",
        "pkill",
        "automation",
        "json",
        "crud",
        "guards",
        "effects",
        "delete-entity",
    }
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
    from staminad.bench.changes import Change, DeleteField, RenameEntity, transition
    from staminad.suite.history import turn_history

    state = SCENARIO.initial
    a, b = state.entities[0].name, state.entities[0].name + "Tmp"
    field = state.entities[0].fields[0].name
    changes: list[Change] = [DeleteField(a, field), RenameEntity(a, b), RenameEntity(b, a)]
    after = transition(state, changes)
    history = turn_history(None, state, changes, after)
    assert history.removed_fields == ((a, field, "deleted"),)
    assert history.retired_endpoints == (b.lower(),)


def _state_with(pred):
    for turn in range(41):
        state, _ = state_and_history(SCENARIO, turn)
        found = pred(state)
        if found:
            return state, found
    raise AssertionError("no state of the scenario has it")


def test_history_records_analytics_and_actions_a_field_deletion_takes_along() -> None:
    """Deleting a field removes its analytics paths implicitly; the history lists them for 404 tests."""
    from staminad.bench.changes import DeleteField, transition
    from staminad.suite.history import turn_history

    state, a = _state_with(
        lambda s: next((a for a in s.analytics if a.field and len(s.entity(a.entity).fields) > 1), None)
    )
    changes = [DeleteField(a.entity, a.field)]
    history = turn_history(None, state, changes, transition(state, changes))
    assert a.path() in history.removed_analytics
    suite = generate_suite(transition(state, changes), 3, 1, history)
    assert any(s.path == a.path() and s.expect == (404,) for t in suite.tests for s in t.steps)


def test_history_records_a_renamed_fields_old_analytics_path_and_a_deleted_entitys_reference_fields() -> None:
    """A field rename retires its old analytics paths; an entity deletion drops other entities' references to it."""
    from staminad.bench.changes import Change, DeleteEntity, RenameField, transition
    from staminad.suite.history import turn_history

    state, a = _state_with(lambda s: next((a for a in s.analytics if a.field), None))
    changes: list[Change] = [RenameField(a.entity, a.field, "renamed_for_test")]
    history = turn_history(None, state, changes, transition(state, changes))
    assert a.path() in history.removed_analytics
    state, (owner, f) = _state_with(
        lambda s: next(
            ((e, f) for e in s.entities for f in e.fields if f.target and f.target != e.name and len(e.fields) > 1),
            None,
        )
    )
    changes = [DeleteEntity(f.target)]
    history = turn_history(None, state, changes, transition(state, changes))
    assert (owner.name, f.name, "dropped") in history.removed_fields


def test_suite_probes_numbers_lengths_and_patches_the_way_bugs_hide() -> None:
    """Float fields get an integral number, length bounds non-ASCII text, PATCH a {valid, invalid} body."""
    state, _ = state_and_history(SCENARIO, 0)
    steps = [(t.name, s) for t in generate_suite(state, 3, 0).tests for s in t.steps]
    floats = [(e, f) for e in state.entities for f in e.fields if f.kind == "float"]
    for e, f in floats:
        sent = [s.body[f.name] for n, s in steps if n == f"{e.endpoint}_{f.name}_integral_float"]
        assert sent and type(sent[0]) is int
    for e, f in [(x, f) for x in state.entities for f in x.fields if f.kind == "string" and f.max_length]:
        sent = [s.body[f.name] for n, s in steps if n == f"{e.endpoint}_{f.name}_at_max_length"]
        assert len(sent[0]) == f.max_length and len(sent[0].encode()) > f.max_length
    atomic = [s for n, s in steps if n.endswith("_patch_atomic") and s.method == "PATCH"]
    assert atomic and all(len(s.body) == 2 and s.expect == (400, 422) for s in atomic)
