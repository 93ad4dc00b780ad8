"""The action space A(s) and the transition tau: atomic schema changes as tagged Structs.

Each change validates against the state it is applied to (`validate` raises `ChangeError` with a
sentence naming what is wrong) and `apply` returns a new state without touching the old one.
Renames rewrite every place the old name was used; deletions prune what depended on the deleted
name. A turn's batch is applied in order with `transition`, each change validated against the
intermediate state the previous ones produced.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from staminad.bench.actionchanges import AddAction, AddCondition, AddEffect, RemoveAction, RemoveCondition, RemoveEffect
from staminad.bench.changebase import ChangeError, check_field, check_name, entity_named, need, replaced, values_free
from staminad.bench.integrity import analytics_ok, kept, prune
from staminad.bench.namerules import nesting
from staminad.bench.schema import (
    NUMERIC_KINDS,
    Action,
    Analytics,
    ArithOperand,
    Compare,
    Compute,
    Condition,
    CountOperand,
    Effect,
    Entity,
    EnumType,
    Field,
    FieldOperand,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
    endpoint_of,
    is_camel,
    is_snake,
)
from staminad.bench.values import scalar_fits


class AddEntity(msgspec.Struct, frozen=True, tag="add_entity"):
    entity: Entity
    new_enums: tuple[EnumType, ...] = ()

    def validate(self, state: State) -> None:
        name = self.entity.name
        need(is_camel(name), f"entity name {name!r} must be CamelCase")
        need(endpoint_of(name) not in ("reset", "analytics"), f"endpoint /{endpoint_of(name)} is reserved")
        need(endpoint_of(name) not in state.endpoints, f"endpoint /{endpoint_of(name)} is already used")
        need(not nesting(e.name for e in state.entities)(name), f"{name} nests with an entity name")
        need(self.entity.fields, "a new entity needs fields")
        need(len({frozenset(n.values) for n in self.new_enums}) == len(self.new_enums), "two new enums are alike")
        probe = state.evolve(enums=(*state.enums, *self.new_enums))
        scratch = Entity(name=name, fields=())
        probe = probe.evolve(entities=(*probe.entities, scratch))
        for f in self.entity.fields:
            new_enum = next((n for n in self.new_enums if n.name == f.enum), None)
            check_field(probe if new_enum is None else state, scratch, f, new_enum)
            scratch = Entity(name=name, fields=(*scratch.fields, f))
            probe = probe.with_entity(scratch)

    def apply(self, state: State) -> State:
        return state.evolve(enums=(*state.enums, *self.new_enums), entities=(*state.entities, self.entity))


class DeleteEntity(msgspec.Struct, frozen=True, tag="delete_entity"):
    name: str

    def validate(self, state: State) -> None:
        entity_named(state, self.name)
        need(len(state.entities) > 1, "the last entity cannot be deleted")

    def apply(self, state: State) -> State:
        return prune(state.evolve(entities=tuple(e for e in state.entities if e.name != self.name)))


class RenameEntity(msgspec.Struct, frozen=True, tag="rename_entity"):
    old: str
    new: str

    def validate(self, state: State) -> None:
        entity_named(state, self.old)
        need(is_camel(self.new), f"entity name {self.new!r} must be CamelCase")
        need(endpoint_of(self.new) not in ("reset", "analytics"), f"endpoint /{endpoint_of(self.new)} is reserved")
        need(endpoint_of(self.new) not in state.endpoints, f"/{self.new.lower()} is taken")
        need(not nesting(e.name for e in state.entities)(self.new, self.old), f"{self.new} nests with an entity name")

    def apply(self, state: State) -> State:
        def ent(e: Entity) -> Entity:
            if e.name != self.old and self.old not in e.targets:
                return e
            fields = tuple(msgspec.structs.replace(f, target=self.new) if f.target == self.old else f for f in e.fields)
            return Entity(name=self.new if e.name == self.old else e.name, fields=fields)

        old, new = self.old, self.new
        analytics = [msgspec.structs.replace(a, entity=new) if a.entity == old else a for a in state.analytics]
        actions = [msgspec.structs.replace(a, entity=new) if a.entity == old else a for a in state.actions]
        return state.evolve(  # parts with no renamed name stay the same tuples, so their indexes carry over
            entities=tuple(ent(e) for e in state.entities),
            analytics=kept(analytics, state.analytics),
            actions=kept(actions, state.actions),
        )


class AddField(msgspec.Struct, frozen=True, tag="add_field"):
    entity: str
    field: Field
    new_enum: EnumType | None = None

    def validate(self, state: State) -> None:
        check_field(state, entity_named(state, self.entity), self.field, self.new_enum)

    def apply(self, state: State) -> State:
        e = entity_named(state, self.entity)
        state = state.with_entity(Entity(name=e.name, fields=(*e.fields, self.field)))
        if self.new_enum is not None:
            state = state.evolve(enums=(*state.enums, self.new_enum))
        return state


class DeleteField(msgspec.Struct, frozen=True, tag="delete_field"):
    entity: str
    field: str

    def validate(self, state: State) -> None:
        e = entity_named(state, self.entity)
        need(e.field(self.field) is not None, f"{self.entity} has no field {self.field!r}")
        need(len(e.fields) > 1, f"{self.entity} must keep at least one field besides id")

    def apply(self, state: State) -> State:
        e = entity_named(state, self.entity)
        kept = tuple(f for f in e.fields if f.name != self.field)
        return prune(state.with_entity(Entity(name=e.name, fields=kept)))


class RenameField(msgspec.Struct, frozen=True, tag="rename_field"):
    entity: str
    old: str
    new: str

    def validate(self, state: State) -> None:
        e = entity_named(state, self.entity)
        f = e.field(self.old)
        need(f is not None, f"{self.entity} has no field {self.old!r}")
        assert f is not None
        need(is_snake(self.new) and self.new != "id", f"field name {self.new!r} must be snake_case and not 'id'")
        need(e.field(self.new) is None, f"{self.entity} already has a field {self.new!r}")
        check_name(state, e, msgspec.structs.replace(f, name=self.new), leaving=self.old)

    def _n(self, name: str) -> str:
        return self.new if name == self.old else name

    def _condition(self, owner: Entity, c: Condition) -> Condition:
        here = owner.name == self.entity
        if isinstance(c, NullCheck):
            return NullCheck(self._n(c.field), c.is_null) if here else c
        if isinstance(c, Quantified):
            if here:
                c = msgspec.structs.replace(c, list_field=self._n(c.list_field))
            if _points_at(owner, c.list_field, self.entity):
                c = msgspec.structs.replace(c, field=self._n(c.field))
            return c
        assert isinstance(c, Compare)
        left = c.left
        if isinstance(left, SumOperand):
            if here:
                left = SumOperand(self._n(left.list_field), left.field)
            if _points_at(owner, left.list_field, self.entity):
                left = SumOperand(left.list_field, self._n(left.field))
        elif here and isinstance(left, FieldOperand):
            left = FieldOperand(self._n(left.field))
        elif here and isinstance(left, ArithOperand):
            left = ArithOperand(self._n(left.left), left.op, self._n(left.right))
        elif here and isinstance(left, CountOperand):
            left = CountOperand(self._n(left.list_field))
        return msgspec.structs.replace(c, left=left)

    def _effect(self, owner: Entity, x: Effect) -> Effect:
        here = owner.name == self.entity
        if isinstance(x, SetValue | Increment):
            return msgspec.structs.replace(x, field=self._n(x.field)) if here else x
        if isinstance(x, Compute):
            return Compute(self._n(x.field), self._n(x.left), x.op, self._n(x.right)) if here else x
        link = x.ref_field if isinstance(x, OnReference) else x.list_field
        inner = x.effect
        if _points_at(owner, link, self.entity):
            inner = msgspec.structs.replace(inner, field=self._n(inner.field))
        if here:
            link = self._n(link)
        if isinstance(x, OnReference):
            return OnReference(link, inner)
        return ForEach(link, inner)

    def apply(self, state: State) -> State:
        e = entity_named(state, self.entity)
        renamed = Entity(
            name=e.name,
            fields=tuple(msgspec.structs.replace(f, name=self.new) if f.name == self.old else f for f in e.fields),
        )
        analytics = tuple(
            msgspec.structs.replace(a, field=self._n(a.field or "")) if a.entity == self.entity and a.field else a
            for a in state.analytics
        )
        # Entities whose actions can name the renamed field: its own, and those linking to it.
        linking = {x.name for x in state.entities if self.entity in x.targets}
        actions = []
        for a in state.actions:
            if a.entity != self.entity and a.entity not in linking:
                actions.append(a)  # nothing in this action can name the renamed field
                continue
            owner = entity_named(state, a.entity)  # looked up in the old state: links still use old names
            actions.append(
                Action(
                    entity=a.entity,
                    name=a.name,
                    field=self._n(a.field) if a.entity == self.entity else a.field,
                    sources=a.sources,
                    target=a.target,
                    conditions=tuple(self._condition(owner, c) for c in a.conditions),
                    effects=tuple(self._effect(owner, x) for x in a.effects),
                )
            )
        new_state = state.with_entity(renamed)
        return new_state.evolve(analytics=kept(analytics, state.analytics), actions=kept(actions, state.actions))


def _points_at(owner: Entity, link_field: str, target: str) -> bool:
    f = owner.field(link_field)
    return f is not None and f.target == target


class ChangeConstraints(msgspec.Struct, frozen=True, tag="change_constraints", omit_defaults=True):
    """Replace the bounds of one field: numeric min/max, string lengths, or datetime range."""

    entity: str
    field: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    after: str | None = None
    before: str | None = None

    def _new_field(self, f: Field) -> Field:
        if f.kind in NUMERIC_KINDS:
            return msgspec.structs.replace(f, minimum=self.minimum, maximum=self.maximum)
        if f.kind == "string":
            return msgspec.structs.replace(f, min_length=self.min_length, max_length=self.max_length)
        return msgspec.structs.replace(f, after=self.after, before=self.before)

    def validate(self, state: State) -> None:
        e = entity_named(state, self.entity)
        f = e.field(self.field)
        need(f is not None, f"{self.entity} has no field {self.field!r}")
        assert f is not None
        need(f.kind in ("integer", "float", "string", "datetime"), f"{self.field} has no bounds to change")
        numeric = (self.minimum, self.maximum)
        lengths = (self.min_length, self.max_length)
        dates = (self.after, self.before)
        mine = numeric if f.kind in NUMERIC_KINDS else lengths if f.kind == "string" else dates
        others = [v for group in (numeric, lengths, dates) if group is not mine for v in group]
        need(all(v is None for v in others), f"bounds given do not apply to a {f.kind} field")
        need(any(v is not None for v in mine), "a constraint change must set at least one bound")
        if f.kind == "integer":
            need(all(v is None or isinstance(v, int) for v in numeric), "integer bounds must be integers")
        lo, hi = mine
        need(lo is None or hi is None or lo <= hi, "the lower bound is above the upper bound")  # type: ignore[operator]
        nf = self._new_field(f)
        need(not nf.has_default or scalar_fits(state, nf, nf.default), "the field's default would break the bounds")
        need(nf != f, "the constraints are unchanged")

    def apply(self, state: State) -> State:
        e = entity_named(state, self.entity)
        fields = tuple(self._new_field(f) if f.name == self.field else f for f in e.fields)
        return state.with_entity(Entity(name=e.name, fields=fields))


class AddAnalytics(msgspec.Struct, frozen=True, tag="add_analytics"):
    analytics: Analytics

    def validate(self, state: State) -> None:
        need(analytics_ok(state, self.analytics), f"{self.analytics.path()} is not over a numeric field")
        need(all(a.path() != self.analytics.path() for a in state.analytics), f"{self.analytics.path()} exists")

    def apply(self, state: State) -> State:
        return state.evolve(analytics=(*state.analytics, self.analytics))


class DeleteAnalytics(msgspec.Struct, frozen=True, tag="delete_analytics"):
    analytics: Analytics

    def validate(self, state: State) -> None:
        need(self.analytics in state.analytics, f"{self.analytics.path()} does not exist")

    def apply(self, state: State) -> State:
        return state.evolve(analytics=tuple(a for a in state.analytics if a != self.analytics))


class AddEnumValue(msgspec.Struct, frozen=True, tag="add_enum_value"):
    enum: str
    value: str

    def validate(self, state: State) -> None:
        en = state.enum(self.enum)
        need(en is not None, f"enum type {self.enum!r} does not exist")
        assert en is not None
        need(is_snake(self.value), f"enum value {self.value!r} must be snake_case")
        need(self.value not in en.values, f"{self.enum} already has {self.value!r}")
        need(
            values_free(state, (*en.values, self.value), en.name), f"another enum type has the values {self.enum} would"
        )

    def apply(self, state: State) -> State:
        en = state.enum(self.enum)
        assert en is not None
        new = EnumType(name=en.name, values=(*en.values, self.value))
        return state.evolve(enums=replaced(state.enums, lambda x: x.name == self.enum, new))


Change = (
    AddEntity
    | DeleteEntity
    | RenameEntity
    | AddField
    | DeleteField
    | RenameField
    | ChangeConstraints
    | AddAnalytics
    | DeleteAnalytics
    | AddAction
    | RemoveAction
    | AddCondition
    | RemoveCondition
    | AddEffect
    | RemoveEffect
    | AddEnumValue
)
CHANGE_TYPES: tuple[type[Change], ...] = (
    AddEntity,
    DeleteEntity,
    RenameEntity,
    AddField,
    DeleteField,
    RenameField,
    ChangeConstraints,
    AddAnalytics,
    DeleteAnalytics,
    AddAction,
    RemoveAction,
    AddCondition,
    RemoveCondition,
    AddEffect,
    RemoveEffect,
    AddEnumValue,
)
CHANGE_KINDS: tuple[str, ...] = tuple(str(t.__struct_config__.tag) for t in CHANGE_TYPES)


def transition(state: State, changes: Sequence[Change]) -> State:
    """tau for one turn: validate and apply each change against the state the previous ones left."""
    for change in changes:
        change.validate(state)
        state = change.apply(state)
    return state


# Every change and the transition, for `from staminad.bench.changes import ...` (the action changes live in
# `actionchanges`, the shared checks in `changebase`).
__all__ = [
    "CHANGE_TYPES",
    "AddAction",
    "AddAnalytics",
    "AddCondition",
    "AddEffect",
    "AddEntity",
    "AddEnumValue",
    "AddField",
    "Change",
    "ChangeConstraints",
    "ChangeError",
    "DeleteAnalytics",
    "DeleteEntity",
    "DeleteField",
    "RemoveAction",
    "RemoveCondition",
    "RemoveEffect",
    "RenameEntity",
    "RenameField",
    "transition",
]
