"""Property tests of the reference system: validity, determinism and growth over long horizons."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from staminad.bench.changes import (
    CHANGE_KINDS,
    AddEntity,
    AddField,
    Change,
    ChangeError,
    DeleteEntity,
    RenameEntity,
    transition,
)
from staminad.bench.domains import DOMAINS
from staminad.bench.integrity import problems
from staminad.bench.naming import Namer, enum_vocabulary, strip_qualifiers
from staminad.bench.sampler import sample_change, weights_for
from staminad.bench.scenario import Scenario, ScenarioParams, generate
from staminad.bench.schema import State, dump_state, load_state

PARAMS = st.builds(
    ScenarioParams,
    turns=st.integers(0, 40),
    sampler=st.sampled_from(["uniform", "weighted"]),
    naming=st.sampled_from(["programmatic", "themed"]),
    changes_per_turn=st.integers(1, 7),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), params=PARAMS)
def test_every_sampled_change_validates_and_every_state_is_valid(seed: int, params: ScenarioParams) -> None:
    """Each change of a generated scenario validates on its intermediate state; all states keep the invariants."""
    scenario = generate(seed, params)
    state = scenario.initial
    assert problems(state) == []
    for batch in scenario.turns:
        assert len(batch) == params.changes_per_turn
        for change in batch:
            change.validate(state)
            state = change.apply(state)
            assert problems(state) == [], change


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), params=PARAMS)
def test_generation_is_deterministic(seed: int, params: ScenarioParams) -> None:
    """The same seed and parameters give the same trajectory, state for state."""
    a, b = generate(seed, params), generate(seed, params)
    assert a == b
    assert [dump_state(s) for s in a.states()] == [dump_state(s) for s in b.states()]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), params=PARAMS)
def test_states_round_trip_through_json(seed: int, params: ScenarioParams) -> None:
    """A state written as JSON loads back equal, so packs reproduce states exactly."""
    for state in generate(seed, params).states():
        assert load_state(dump_state(state)) == state


@pytest.mark.slow  # 1.5-3 s of CPU per case: 1,000 turns generated
@pytest.mark.parametrize("sampler", ["uniform", "weighted"])
@pytest.mark.parametrize("naming", ["programmatic", "themed"])
def test_states_keep_growing_for_a_thousand_turns(sampler: str, naming: str) -> None:
    """States stay valid for 1,000 turns and reach 10+ entities with relationships and actions by turn 30."""
    scenario = generate(11, ScenarioParams(turns=1000, sampler=sampler, naming=naming))  # type: ignore[arg-type]
    sizes = []
    for t, state in enumerate(scenario.states()):
        if t in (0, 30, 250, 500, 1000):
            assert problems(state) == []
            sizes.append(len(state.entities))
        if t == 30:
            assert len(state.entities) >= 10
            assert state.relationship_count() >= 3
            assert state.actions
            assert any(a.conditions and a.effects for a in state.actions)
    assert sizes == sorted(sizes) and sizes[-1] > 100


def test_every_change_type_is_drawn() -> None:
    """Both samplers exercise all 16 change types of the action space within a few scenarios."""
    for sampler in ("uniform", "weighted"):
        seen: set[str | int | None] = set()
        for seed in range(4):
            for batch in generate(seed, ScenarioParams(turns=60, sampler=sampler)).turns:
                seen.update(type(c).__struct_config__.tag for c in batch)
        assert seen == set(CHANGE_KINDS), set(CHANGE_KINDS) - seen


def test_weights_override_excludes_a_change_type() -> None:
    """A zero weight removes a change type from what the sampler draws."""
    w = weights_for("uniform", {"add_entity": 0})
    rng = random.Random(1)
    namer = Namer("programmatic", rng)
    state = generate(1, ScenarioParams(turns=0)).initial
    for _ in range(200):
        change = sample_change(state, rng, namer, w, 0)
        assert type(change).__struct_config__.tag != "add_entity"
        state = change.apply(state)


def test_unknown_weight_key_is_refused() -> None:
    """A sampler weight for a change type that does not exist is an error, not silently ignored."""
    with pytest.raises(ValueError, match="unknown change type"):
        weights_for("weighted", {"add_everything": 1.0})


def test_entity_rename_propagates_but_keeps_referencing_field_names() -> None:
    """Renaming an entity retargets references, analytics and actions; referencing field names stay (paper E.1)."""
    for seed in range(40):
        scenario = generate(seed, ScenarioParams(turns=30))
        for before in scenario.states():
            targets = [(e.name, f) for e in before.entities for f in e.fields if f.kind in ("ref", "ref_list")]
            if not targets:
                continue
            owner, field = targets[0]
            old = field.target
            assert old is not None
            after = RenameEntity(old, old + "Renamed").apply(before)
            assert problems(after) == []
            new_owner = after.entity(owner if owner != old else old + "Renamed")
            assert new_owner is not None
            moved = new_owner.field(field.name)
            assert moved is not None and moved.target == old + "Renamed"
            assert all(a.entity != old for a in after.analytics + tuple(after.actions))
            return
    raise AssertionError("no scenario with a reference in 40 seeds")


def test_entity_delete_removes_referencing_fields_and_dependents() -> None:
    """Deleting an entity drops reference fields to it and its analytics and actions."""
    state = generate(5, ScenarioParams(turns=25)).state_at(25)
    victim = next(e.name for e in state.entities if any(f.target == e.name for o in state.entities for f in o.fields))
    after = DeleteEntity(victim).apply(state)
    assert problems(after) == []
    assert after.entity(victim) is None
    assert all(f.target != victim for e in after.entities for f in e.fields)
    assert all(a.entity != victim for a in after.analytics)
    assert all(a.entity != victim for a in after.actions)


def test_invalid_changes_are_refused_with_a_reason() -> None:
    """Changes that do not fit the state raise ChangeError naming the problem."""
    state = generate(2, ScenarioParams(turns=0)).initial
    first = state.entities[0].name
    with pytest.raises(ChangeError, match="does not exist"):
        transition(state, [DeleteEntity("NoSuchThing")])
    with pytest.raises(ChangeError, match="taken"):
        RenameEntity(first, state.entities[1].name.upper()[0] + state.entities[1].name[1:]).validate(state)
    with pytest.raises(ChangeError, match="CamelCase"):
        RenameEntity(first, "not_camel").validate(state)


def test_themed_naming_has_at_least_twelve_domains() -> None:
    """The themed mode offers at least 12 coherent product domains."""
    assert len({d.key for d in DOMAINS}) >= 12
    assert all(len(d.nouns) >= 8 for d in DOMAINS)


THEMED = st.builds(
    ScenarioParams,
    turns=st.integers(10, 40),
    sampler=st.sampled_from(["uniform", "weighted"]),
    naming=st.just("themed"),
    changes_per_turn=st.integers(1, 7),
)


def _walk(scenario: Scenario) -> Iterator[tuple[int, Change, State, State]]:
    """(change index, change, state before, state after) for every change of the scenario, in order."""
    state, i = scenario.initial, 0
    for batch in scenario.turns:
        for change in batch:
            after = change.apply(state)
            yield i, change, state, after
            state, i = after, i + 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), params=THEMED)
def test_themed_enums_never_share_a_value_list(seed: int, params: ScenarioParams) -> None:
    """No two enums of a themed state hold the same values (the generator derives no enum from another)."""
    for state in generate(seed, params).states():
        lists = [frozenset(e.values) for e in state.enums]
        assert len(lists) == len(set(lists)), sorted(e.values for e in state.enums)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), params=THEMED)
def test_themed_enum_fields_are_named_after_their_values(seed: int, params: ScenarioParams) -> None:
    """A themed enum field is named by its value set's own word (maybe qualified), and grows only in that set."""
    scenario = generate(seed, params)
    vocab = [x for d in DOMAINS for x in enum_vocabulary(d)]
    for state in scenario.states():
        for e in state.entities:
            for f in e.fields:
                en = state.enum(f.enum or "") if f.kind == "enum" else None
                if en is None:
                    continue
                origin = [(h, v, sp) for h, v, sp in vocab if set(v) <= set(en.values)]
                if not origin:  # the last resort once every set is in use: a sample of generic values
                    continue
                assert any(strip_qualifiers(f.name) == h and set(en.values) <= {*v, *sp} for h, v, sp in origin), (
                    e.name,
                    f.name,
                    en.values,
                )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), params=THEMED)
def test_themed_entity_names_are_never_reused(seed: int, params: ScenarioParams) -> None:
    """A name that once named an entity (or an enum type) names no other one later, so renames never shuffle names."""
    scenario = generate(seed, params)
    seen = {e.name.lower() for e in scenario.initial.entities} | {e.name.lower() for e in scenario.initial.enums}
    for _, change, _, _ in _walk(scenario):
        new = (
            change.entity.name
            if isinstance(change, AddEntity)
            else change.new
            if isinstance(change, RenameEntity)
            else None
        )
        if new is not None:
            assert new.lower() not in seen, new
            seen.add(new.lower())
        enums = change.new_enums if isinstance(change, AddEntity) else ()
        if isinstance(change, AddField) and change.new_enum is not None:
            enums = (change.new_enum,)
        for en in enums:
            assert en.name.lower() not in seen, en.name
            seen.add(en.name.lower())


def test_programmatic_names_stay_the_papers() -> None:
    """The programmatic mode draws no themed vocabulary: its names come from the paper-style word lists."""
    scenario = generate(1, ScenarioParams(turns=20, naming="programmatic"))
    nouns = {
        "Dog",
        "Page",
        "Comment",
        "Order",
        "User",
        "Task",
        "Note",
        "Item",
        "Group",
        "Event",
        "Ticket",
        "Shelf",
        "Report",
        "Badge",
        "Folder",
        "Invoice",
        "Channel",
        "Device",
        "Route",
        "Member",
    }
    for state in scenario.states():
        assert all(any(e.name.endswith(n) for n in nouns) for e in state.entities)
