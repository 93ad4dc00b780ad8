"""Names coherent with types and history, and change requests free of items that cancel each other (seeds 0-19 x 60)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from staminad.bench.changes import (
    AddAction,
    AddCondition,
    AddEffect,
    AddEntity,
    AddField,
    Change,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RemoveCondition,
    RemoveEffect,
    RenameEntity,
    RenameField,
)
from staminad.bench.scenario import Scenario, ScenarioParams, generate
from staminad.bench.schema import EnumType
from staminad.bench.vocabulary import name_fits

SEEDS = range(20)
TURNS = 60


def _scenario(seed: int, naming: str) -> Scenario:
    return generate(seed, ScenarioParams(turns=TURNS, naming=naming))  # type: ignore[arg-type]


def _snake(name: str) -> str:
    return "_".join(w.lower() for w in re.findall(r"[A-Z][a-z0-9]*", name))


def _new_enums(change: Change) -> tuple[EnumType, ...]:
    if isinstance(change, AddEntity):
        return change.new_enums
    return (change.new_enum,) if isinstance(change, AddField) and change.new_enum else ()


@pytest.mark.parametrize("naming", ["themed", "programmatic"])
@pytest.mark.parametrize("seed", SEEDS)
def test_names_agree_with_types_and_history(seed: int, naming: str) -> None:
    """Names agree with types and history: head words, references, unique type names, enums after their field."""
    scenario = _scenario(seed, naming)
    seen = {e.name.lower() for e in scenario.initial.entities} | {e.name.lower() for e in scenario.initial.enums}
    entities = {_snake(e.name) for e in scenario.initial.entities}
    state = scenario.initial
    for batch in scenario.turns:
        for change in batch:
            new = change.entity.name if isinstance(change, AddEntity) else None
            new = change.new if isinstance(change, RenameEntity) else new
            for name in [*([new] if new else []), *(e.name for e in _new_enums(change))]:
                assert name.lower() not in seen, (seed, name)
                seen.add(name.lower())
            if new:
                entities.add(_snake(new))
            for en in _new_enums(change):
                owner = next(f.name for e in change.apply(state).entities for f in e.fields if f.enum == en.name)
                camel = "".join(w.capitalize() for w in owner.split("_"))
                assert camel in en.name, (seed, en.name, owner)  # so an entity rename leaves no stale prefix
            state = change.apply(state)
        for e in state.entities:
            for f in e.fields:
                if f.kind in ("ref", "ref_list"):
                    assert any(f.name.endswith((b, b + "s")) for b in entities), (seed, e.name, f.name)
                else:
                    assert name_fits(f.name, f.kind), (seed, e.name, f.name, f.kind)


def _carry(key: tuple[str, ...], change: Change) -> tuple[str, ...]:
    """A key (entity first) under its names after a rename."""
    if isinstance(change, RenameEntity) and key[0] == change.old:
        return (change.new, *key[1:])
    if isinstance(change, RenameField) and key[:2] == (change.entity, change.old):
        return (change.entity, change.new, *key[2:])
    return key


def _added(change: Change) -> Iterator[tuple[str, ...]]:
    match change:
        case AddEntity(entity=e):
            yield (e.name,)
        case AddField(entity=e, field=f):
            yield (e, f.name)
        case AddAction(action=a):
            yield (a.entity, "action", a.name)
        case AddCondition(entity=e, action=a, condition=c):
            yield (e, "action", a)
            yield (e, "action", a, repr(c))
        case AddEffect(entity=e, action=a, effect=x):
            yield (e, "action", a)
            yield (e, "action", a, repr(x))


def _removes(change: Change, key: tuple[str, ...]) -> bool:
    match change:
        case DeleteEntity(name=name):
            return key[0] == name
        case DeleteField(entity=e, field=f):
            return key[:2] == (e, f)
        case RemoveAction(entity=e, name=name):
            return key[:3] == (e, "action", name)
        case RemoveCondition(entity=e, action=a, condition=c) | RemoveEffect(entity=e, action=a, effect=c):
            return key == (e, "action", a, repr(c))
    return False


@pytest.mark.parametrize("seed", SEEDS)
def test_no_change_request_holds_items_that_cancel_each_other(seed: int) -> None:
    """No change request adds and removes (or renames back) the same item within one turn."""
    for turn, batch in enumerate(_scenario(seed, "themed").turns, 1):
        added: list[tuple[str, ...]] = []
        names: dict[tuple[str, ...], set[str]] = {}
        for change in batch:
            assert not any(_removes(change, k) for k in added), (seed, turn, change)
            if isinstance(change, RenameEntity):
                assert change.new not in names.get((change.old,), set()), (seed, turn, change)
                names[(change.new,)] = names.pop((change.old,), set()) | {change.old}
            if isinstance(change, RenameField):
                key = (change.entity, change.old)
                assert change.new not in names.get(key, set()), (seed, turn, change)
                names[(change.entity, change.new)] = names.pop(key, set()) | {change.old}
            names = {_carry(k, change): v for k, v in names.items()} if isinstance(change, RenameEntity) else names
            added = [_carry(k, change) for k in added] + list(_added(change))
