"""Change requests free of items that cancel each other.

A turn's batch is drawn change by change (`sampler.sample_turn`); a change that undoes part of an
earlier one in the same batch (removes an action, field, entity, guard, effect or analytics that the
batch added or changed, or renames something back to a name it had earlier in the batch) reads as
noise to an agent and tests nothing. `Batch` remembers what the batch touched, under its current
names, and `cancels` tells whether a proposed change would undo some of it, counting what a removal
takes with it (the guards and analytics of a deleted field, the fields referencing a deleted entity).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from staminad.bench.changes import (
    AddAction,
    AddAnalytics,
    AddCondition,
    AddEffect,
    AddEntity,
    AddEnumValue,
    AddField,
    Change,
    ChangeConstraints,
    DeleteAnalytics,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RemoveCondition,
    RemoveEffect,
    RenameEntity,
    RenameField,
)
from staminad.bench.schema import Action, Entity, State

Key = tuple[Any, ...]
_REMOVALS = (DeleteEntity, DeleteField, RemoveAction, RemoveCondition, RemoveEffect, DeleteAnalytics)


def _entity_keys(e: Entity) -> Iterator[Key]:
    yield ("entity", e.name)
    for f in e.fields:
        yield ("field", e.name, f.name)


def _action_keys(a: Action) -> Iterator[Key]:
    yield ("action", a.entity, a.name)
    for c in a.conditions:
        yield ("guard", a.entity, a.name, msgspec.json.encode(c))
    for x in a.effects:
        yield ("effect", a.entity, a.name, msgspec.json.encode(x))


def _has(state: State, key: Key) -> bool:
    """Whether `state` holds the removable part `key` names (names are unique per kind, so one lookup
    finds it: no key set of the whole state is built)."""
    kind = key[0]
    if kind == "entity":
        return state.entity(key[1]) is not None
    if kind == "field":
        e = state.entity(key[1])
        return e is not None and e.field(key[2]) is not None
    if kind == "enum":
        return state.enum(key[1]) is not None
    if kind == "analytics":
        return any((an.entity, an.field, an.op) == key[1:] for an in state.analytics)
    a = state.action(key[1], key[2])
    if a is None or kind == "action":
        return a is not None
    parts = a.conditions if kind == "guard" else a.effects
    return any(msgspec.json.encode(x) == key[3] for x in parts)


def _may_differ(state: State, after: State, key: Key) -> bool:
    """False when the part of the state `key` lives in is the same tuple in both states (it is then held in
    both or in neither)."""
    kind = key[0]
    if kind in ("entity", "field"):
        return state.entities is not after.entities
    if kind == "enum":
        return state.enums is not after.enums
    if kind == "analytics":
        return state.analytics is not after.analytics
    return state.actions is not after.actions


def _touches(change: Change) -> Iterator[Key]:
    """What an addition or an edit puts into the design (renames are carried by `Batch.record`)."""
    match change:
        case AddEntity(entity=e, new_enums=enums):
            yield from _entity_keys(e)
            yield from (("enum", en.name) for en in enums)
        case AddField(entity=e, field=f, new_enum=en):
            yield ("field", e, f.name)
            if en is not None:
                yield ("enum", en.name)
        case ChangeConstraints(entity=e, field=f):
            yield ("field", e, f)
        case AddAnalytics(analytics=an):
            yield ("analytics", an.entity, an.field, an.op)
        case AddAction(action=a):
            yield from _action_keys(a)
        case AddCondition(entity=e, action=a, condition=c):
            yield from (("action", e, a), ("guard", e, a, msgspec.json.encode(c)))
        case AddEffect(entity=e, action=a, effect=x):
            yield from (("action", e, a), ("effect", e, a, msgspec.json.encode(x)))
        case AddEnumValue(enum=en):
            yield ("enum", en)


def _carry(key: Key, change: RenameEntity | RenameField) -> Key:
    """A key under the names it has after a rename."""
    if isinstance(change, RenameEntity):
        return (key[0], change.new, *key[2:]) if key[0] != "enum" and key[1] == change.old else key
    return ("field", change.entity, change.new) if key == ("field", change.entity, change.old) else key


class Batch:
    """What the changes drawn so far in one batch added or changed, and the names renamed things had."""

    def __init__(self) -> None:
        self.touched: set[Key] = set()
        self.names: dict[Key, set[str]] = {}  # ("entity", E) or ("field", E, f) -> names it had in this batch
        self._applied: tuple[State, Change, State] | None = None  # the last (state, change, result) applied

    def cancels(self, state: State, change: Change) -> bool:
        """Whether `change`, proposed on `state`, undoes something this batch did."""
        if isinstance(change, RenameEntity):
            return change.new in self.names.get(("entity", change.old), set())
        if isinstance(change, RenameField):
            return change.new in self.names.get(("field", change.entity, change.old), set())
        if not isinstance(change, _REMOVALS) or not self.touched:
            return False
        after = self.apply(state, change)
        return any(_has(state, k) and not _has(after, k) for k in self.touched if _may_differ(state, after, k))

    def apply(self, state: State, change: Change) -> State:
        """`change.apply(state)`, reusing the state `cancels` computed when it was asked about this same change
        (a removal's prune is the costliest part of a turn)."""
        last = self._applied
        if last is not None and last[0] is state and last[1] is change:
            return last[2]
        after = change.apply(state)
        self._applied = (state, change, after)
        return after

    def record(self, change: Change) -> None:
        """Remember what `change` touched, carrying earlier keys through a rename."""
        if isinstance(change, RenameEntity | RenameField):
            renamed = isinstance(change, RenameEntity)
            old: Key = ("entity", change.old) if renamed else ("field", change.entity, change.old)  # type: ignore[union-attr]
            new: Key = ("entity", change.new) if renamed else ("field", change.entity, change.new)  # type: ignore[union-attr]
            self.touched = {_carry(k, change) for k in self.touched} | {new}
            self.names = {_carry(k, change): v for k, v in self.names.items()}
            self.names[new] = self.names.get(new, set()) | {old[-1]}
            return
        self.touched |= set(_touches(change))
