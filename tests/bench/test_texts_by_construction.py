"""Texts an agent trips over (issue 39 item 3), each prevented by construction: meaningless null guards, enum types
alike, guard operators the README does not list, counts that disagree with their nouns, field names with two
meanings and names nested in other names. The sweeps cover seeds 0-99, both namings, both samplers, 30-60 turns."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import get_args

import pytest

from staminad.bench.changes import (
    AddAction,
    AddCondition,
    AddEffect,
    AddEntity,
    AddEnumValue,
    AddField,
    Change,
    ChangeError,
    RenameEntity,
    RenameField,
)
from staminad.bench.integrity import condition_ok, problems
from staminad.bench.namerules import name_problems, nested
from staminad.bench.phrases import condition_phrase, counted, effect_phrase
from staminad.bench.readme import RULES
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.schema import (
    Action,
    Analytics,
    ArithOp,
    CompareOp,
    Entity,
    EnumType,
    Field,
    NullCheck,
    State,
)
from staminad.bench.texts import render_change_prompt, render_spec

NAMINGS = ("programmatic", "themed")
SAMPLERS = ("uniform", "weighted")
# Count nouns the texts use, singular -> plural.
NOUNS = {
    "entity": "entities",
    "relationship": "relationships",
    "analytics endpoint": "analytics endpoints",
    "action": "actions",
    "field": "fields",
    "value": "values",
}
_COUNT = re.compile(r"\b(\d+) (" + "|".join(sorted({*NOUNS, *NOUNS.values()}, key=len, reverse=True)) + r")\b")
_OPERATOR = re.compile(r"(?<= )[^\w\s\"().,:\[\]-]+(?= )|(?<= )-(?= )")


def _turns(seed: int) -> int:
    return 30 + seed % 31  # 30 to 60 turns


def _walk(seed: int, naming: str, sampler: str, turns: int) -> Iterator[tuple[Change, State, State]]:
    """Every change of a scenario with the states around it, each change validated as it is replayed."""
    scenario = generate(seed, ScenarioParams(turns=turns, naming=naming, sampler=sampler))  # type: ignore[arg-type]
    state = scenario.initial
    for batch in scenario.turns:
        for change in batch:
            change.validate(state)
            after = change.apply(state)
            yield change, state, after
            state = after


def _null_guards_on_non_nullable(state: State) -> list[str]:
    out = []
    for a in state.actions:
        entity = state.entity(a.entity)
        assert entity is not None
        for c in a.conditions:
            f = entity.field(c.field) if isinstance(c, NullCheck) else None
            if isinstance(c, NullCheck) and (f is None or not f.nullable):
                out.append(f"{a.entity}.{a.name}: {condition_phrase(c)}")
    return out


def _enum_twins(state: State) -> list[str]:
    seen: dict[frozenset[str], str] = {}
    return [
        f"{e.name} = {seen[frozenset(e.values)]}"
        for e in state.enums
        if seen.setdefault(frozenset(e.values), e.name) != e.name
    ]


def _count_mismatches(text: str) -> list[str]:
    out = []
    for n, noun in _COUNT.findall(text):
        plural = noun in NOUNS.values()
        if (int(n) == 1) == plural:
            out.append(f"{n} {noun}")
    return out


def _sweep(naming: str, sampler: str, seeds: range) -> None:
    """Every defect check on every state (and every spec and change prompt) of the seeds' scenarios."""
    for seed in seeds:
        states: list[State] = []
        changes: list[Change] = []
        for change, before, after in _walk(seed, naming, sampler, _turns(seed)):
            if not states:
                states.append(before)
                assert problems(before) == [], (seed, "initial")
            assert problems(after) == [], (seed, change)
            assert _null_guards_on_non_nullable(after) == [], (seed, change)
            assert _enum_twins(after) == [], (seed, change)
            assert name_problems(after) == [], (seed, change)
            states.append(after)
            changes.append(change)
        assert _count_mismatches(render_spec(states[-1])) == [], seed
        assert _count_mismatches(render_change_prompt(changes[-5:], states[-6:])) == [], seed


@pytest.mark.slow  # 100 scenarios of 30-60 turns, each change replayed and checked: ~20-40 s of CPU
@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize("naming", NAMINGS)
def test_no_text_defect_on_any_state_of_seeds_0_to_99(naming: str, sampler: str) -> None:
    """Seeds 0-99 at 30-60 turns: no state breaks an invariant, and no spec or prompt miscounts a noun."""
    _sweep(naming, sampler, range(100))


@pytest.mark.parametrize("naming", NAMINGS)
def test_no_text_defect_on_a_few_seeds(naming: str) -> None:
    """The sweep above on two seeds per naming, for the fast tier."""
    _sweep(naming, "weighted", range(2))


# --- 1. null guards ---------------------------------------------------------------------------------------------


def _small_state() -> State:
    """Two entities (a reference between them), one enum type, an analytics endpoint and an action."""
    order = Entity(
        name="Order",
        fields=(
            Field(name="status", kind="enum", enum="Status", required=True),
            Field(name="note", kind="string", nullable=True),
            Field(name="tag", kind="string"),
            Field(name="count", kind="integer"),
        ),
    )
    parcel = Entity(name="Parcel", fields=(Field(name="order", kind="ref", target="Order", nullable=True),))
    action = Action(entity="Order", name="close", field="status", sources=("open",), target="closed")
    return State(
        enums=(EnumType(name="Status", values=("open", "closed")),),
        entities=(order, parcel),
        analytics=(Analytics(entity="Order", op="count"),),
        actions=(action,),
    )


def test_a_null_guard_on_a_non_nullable_field_is_ill_typed() -> None:
    """`this.tag is null` on a non-nullable field is refused; on a nullable one it is a guard."""
    state = _small_state()
    order = state.entity("Order")
    assert order is not None
    assert condition_ok(state, order, NullCheck("note", True))
    assert not condition_ok(state, order, NullCheck("tag", True))
    assert not condition_ok(state, order, NullCheck("tag", False))


# --- 2. enum types alike ----------------------------------------------------------------------------------------


def test_an_enum_type_alike_an_older_one_is_refused() -> None:
    """A new or grown enum type with another's values (as a set) is refused, and a state holding two is flagged."""
    state = _small_state()
    twin = EnumType(name="Phase", values=("closed", "open"))
    with pytest.raises(ChangeError, match="values"):
        AddField("Order", Field(name="phase", kind="enum", enum="Phase"), twin).validate(state)
    grown = AddField("Order", Field(name="phase", kind="enum", enum="Phase"), EnumType(name="Phase", values=("open",)))
    grown.validate(state)
    with pytest.raises(ChangeError, match="values"):
        AddEnumValue("Phase", "closed").validate(grown.apply(state))
    pair = (EnumType(name="Mode", values=("a", "b")), EnumType(name="Kind", values=("b", "a")))
    fields = (Field(name="mode", kind="enum", enum="Mode"), Field(name="kind", kind="enum", enum="Kind"))
    with pytest.raises(ChangeError, match="alike"):
        AddEntity(Entity(name="Crate", fields=fields), pair).validate(state)
    assert "two enum types have the same values" in problems(state.evolve(enums=(*state.enums, twin)))


# --- 3. guard operators ------------------------------------------------------------------------------------------


def _emitted_operators() -> set[str]:
    """The operators the generator's guards and effects hold, read off the phrases of every action, guard and
    effect that generated scenarios add."""
    phrases: list[str] = []
    for seed in range(10):
        for naming in NAMINGS:
            scenario = generate(seed, ScenarioParams(turns=40, naming=naming, sampler="weighted"))  # type: ignore[arg-type]
            actions = [*scenario.initial.actions]
            for batch in scenario.turns:
                for change in batch:
                    if isinstance(change, AddAction):
                        actions.append(change.action)
                    elif isinstance(change, AddCondition):
                        phrases.append(condition_phrase(change.condition))
                    elif isinstance(change, AddEffect):
                        phrases.append(effect_phrase(scenario.initial, change.entity, change.effect))
            phrases += [condition_phrase(c) for a in actions for c in a.conditions]
            phrases += [effect_phrase(scenario.initial, a.entity, x) for a in actions for x in a.effects]
    return {op for phrase in phrases for op in _OPERATOR.findall(phrase)}


def test_readme_lists_every_operator_guards_and_effects_use() -> None:
    """Every guard and effect operator (the schema's, and any found in generated texts) is in the README guards rule."""
    guards = RULES["guards"]
    allowed = set(get_args(CompareOp)) | set(get_args(ArithOp))
    emitted = _emitted_operators()
    assert emitted <= allowed, emitted - allowed
    assert {"*", "-", "+", "<="} <= emitted  # the reading finds operators at all
    for op in get_args(CompareOp):
        assert f"`{op}`" in guards, op
    for op in get_args(ArithOp):
        assert f"`this.a {op} this.b`" in guards, op
    for form in ("count(this.", "sum(this.", "is null", "is not null", "any of", "all of"):
        assert form in guards, form


# --- 4. counts ----------------------------------------------------------------------------------------------------


def test_counts_agree_with_their_nouns() -> None:
    """`counted` writes 1 with the singular and any other number with the plural; the spec header uses it."""
    assert counted(1, "relationship") == "1 relationship"
    assert counted(2, "relationship") == "2 relationships"
    assert counted(0, "entity", "entities") == "0 entities"
    header = render_spec(_small_state()).splitlines()[2]
    assert header == (
        "The system has 2 entities, 1 relationship between entities, 1 analytics endpoint and 1 action."
    ), header
    assert _count_mismatches("1 relationships, 2 entity, 1 action, 3 values") == ["1 relationships", "2 entity"]


# --- 5. one meaning per field name ------------------------------------------------------------------------------


def test_a_field_name_with_another_meaning_elsewhere_is_refused() -> None:
    """`status` is an enum on Order, so no entity may add or rename a field to a string `status`."""
    state = _small_state()
    with pytest.raises(ChangeError, match="status"):
        AddField("Parcel", Field(name="status", kind="string")).validate(state)
    with pytest.raises(ChangeError, match="count"):
        AddField("Parcel", Field(name="count", kind="float")).validate(state)
    AddField("Parcel", Field(name="count", kind="integer")).validate(state)  # the same meaning is fine
    parcel = AddField("Parcel", Field(name="label", kind="string")).apply(state)
    with pytest.raises(ChangeError, match="status"):
        RenameField("Parcel", "label", "status").validate(parcel)
    broken = state.with_entity(Entity(name="Parcel", fields=(Field(name="status", kind="string"),)))
    assert any("'status'" in p for p in name_problems(broken))


# --- 6. nested names ------------------------------------------------------------------------------------------------


def test_nested_names_follow_the_policy() -> None:
    """Whole-word parts, not substrings: `count` is inside `visit_count` but not inside `counter`."""
    assert nested("count", "visit_count") and nested("visit_count", "count")
    assert not nested("count", "counter") and not nested("count", "count")
    assert nested("Order", "OrderItem") and nested("Item", "OrderItem") and not nested("Order", "Ordering")


def test_names_nested_in_others_are_refused() -> None:
    """No field of an entity inside another of its fields, no entity name inside another; the state check agrees."""
    state = _small_state()
    with pytest.raises(ChangeError, match="inside"):
        AddField("Order", Field(name="visit_count", kind="integer")).validate(state)
    AddField("Parcel", Field(name="visit_count", kind="integer")).validate(state)  # another entity: fine
    with pytest.raises(ChangeError, match="nests"):
        AddEntity(Entity(name="OrderItem", fields=(Field(name="qty", kind="integer"),))).validate(state)
    with pytest.raises(ChangeError, match="nests"):
        RenameEntity("Parcel", "BigOrder").validate(state)
    RenameEntity("Order", "OrderBook").validate(state)  # its own old name leaves
    with pytest.raises(ChangeError, match="inside"):
        RenameField("Order", "tag", "tag_count").validate(state)
    nested_fields = Entity(name="Order", fields=(*state.entities[0].fields, Field(name="tag_note", kind="string")))
    assert any("inside" in p for p in name_problems(state.with_entity(nested_fields)))
    nested_entities = state.evolve(
        entities=(*state.entities, Entity(name="MainParcel", fields=state.entities[1].fields))
    )
    assert any("whole-word part" in p for p in name_problems(nested_entities))
