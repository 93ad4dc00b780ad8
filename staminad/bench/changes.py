"""The action space A(s) and the transition tau: atomic schema changes as tagged Structs.

Each change validates against the state it is applied to (`validate` raises `ChangeError` with a
sentence naming what is wrong) and `apply` returns a new state without touching the old one.
Renames rewrite every place the old name was used; deletions prune what depended on the deleted
name. A turn's batch is applied in order with `transition`, each change validated against the
intermediate state the previous ones produced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from protocol.errors import UsageError
from staminad.bench.integrity import action_core_ok, analytics_ok, condition_ok, effect_ok, kept, prune
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


class ChangeError(UsageError, ValueError):
    """A change that does not fit the state it is applied to."""


T = TypeVar("T")


def _need(ok: object, message: str) -> None:
    if not ok:
        raise ChangeError(message)


def _entity(state: State, name: str) -> Entity:
    e = state.entity(name)
    _need(e is not None, f"entity {name!r} does not exist")
    assert e is not None
    return e


def _replace(items: Sequence[T], match: Callable[[T], bool], new: T) -> tuple[T, ...]:
    return tuple(new if match(x) else x for x in items)


def _with_entity(state: State, entity: Entity) -> State:
    return state.with_entity(entity)


def _check_field(state: State, entity: Entity, f: Field, new_enum: EnumType | None) -> None:
    _need(is_snake(f.name) and f.name != "id", f"field name {f.name!r} must be snake_case and not 'id'")
    _need(entity.field(f.name) is None, f"entity {entity.name} already has a field {f.name!r}")
    if f.kind == "enum":
        if new_enum is not None:
            _need(new_enum.name == f.enum, "the new enum type must be the one the field uses")
            _need(state.enum(new_enum.name) is None, f"enum type {new_enum.name} already exists")
            _need(is_camel(new_enum.name) and new_enum.values, "enum types need a CamelCase name and values")
            _need(len(set(new_enum.values)) == len(new_enum.values), "enum values must be unique")
            _need(all(is_snake(v) for v in new_enum.values), "enum values must be snake_case")
        else:
            _need(state.enum(f.enum or "") is not None, f"enum type {f.enum!r} does not exist")
    if f.kind in ("ref", "ref_list"):
        _need(f.target is not None and state.entity(f.target) is not None, f"reference target {f.target!r} missing")
        _need(f.target != entity.name, "an entity may not reference itself")
        if f.kind == "ref":
            _need(f.nullable and not f.required, "references are optional and nullable")
        else:
            _need(not f.nullable and not f.required and not f.has_default, "reference lists are optional, non-null")
    if f.has_default:
        probe = state.evolve(enums=(*state.enums, new_enum) if new_enum else state.enums)
        _need(scalar_fits(probe, f, f.default), f"default {f.default!r} breaks the rules of {f.name}")


class AddEntity(msgspec.Struct, frozen=True, tag="add_entity"):
    entity: Entity
    new_enums: tuple[EnumType, ...] = ()

    def validate(self, state: State) -> None:
        name = self.entity.name
        _need(is_camel(name), f"entity name {name!r} must be CamelCase")
        _need(endpoint_of(name) not in ("reset", "analytics"), f"endpoint /{endpoint_of(name)} is reserved")
        _need(endpoint_of(name) not in state.endpoints, f"endpoint /{endpoint_of(name)} is already used")
        _need(self.entity.fields, "a new entity needs fields")
        probe = state.evolve(enums=(*state.enums, *self.new_enums))
        scratch = Entity(name=name, fields=())
        probe = probe.evolve(entities=(*probe.entities, scratch))
        for f in self.entity.fields:
            new_enum = next((n for n in self.new_enums if n.name == f.enum), None)
            _check_field(probe if new_enum is None else state, scratch, f, new_enum)
            scratch = Entity(name=name, fields=(*scratch.fields, f))
            probe = _with_entity(probe, scratch)

    def apply(self, state: State) -> State:
        return state.evolve(enums=(*state.enums, *self.new_enums), entities=(*state.entities, self.entity))


class DeleteEntity(msgspec.Struct, frozen=True, tag="delete_entity"):
    name: str

    def validate(self, state: State) -> None:
        _entity(state, self.name)
        _need(len(state.entities) > 1, "the last entity cannot be deleted")

    def apply(self, state: State) -> State:
        return prune(state.evolve(entities=tuple(e for e in state.entities if e.name != self.name)))


class RenameEntity(msgspec.Struct, frozen=True, tag="rename_entity"):
    old: str
    new: str

    def validate(self, state: State) -> None:
        _entity(state, self.old)
        _need(is_camel(self.new), f"entity name {self.new!r} must be CamelCase")
        _need(endpoint_of(self.new) not in ("reset", "analytics"), f"endpoint /{endpoint_of(self.new)} is reserved")
        _need(endpoint_of(self.new) not in state.endpoints, f"/{self.new.lower()} is taken")

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
        _check_field(state, _entity(state, self.entity), self.field, self.new_enum)

    def apply(self, state: State) -> State:
        e = _entity(state, self.entity)
        state = _with_entity(state, Entity(name=e.name, fields=(*e.fields, self.field)))
        if self.new_enum is not None:
            state = state.evolve(enums=(*state.enums, self.new_enum))
        return state


class DeleteField(msgspec.Struct, frozen=True, tag="delete_field"):
    entity: str
    field: str

    def validate(self, state: State) -> None:
        e = _entity(state, self.entity)
        _need(e.field(self.field) is not None, f"{self.entity} has no field {self.field!r}")
        _need(len(e.fields) > 1, f"{self.entity} must keep at least one field besides id")

    def apply(self, state: State) -> State:
        e = _entity(state, self.entity)
        kept = tuple(f for f in e.fields if f.name != self.field)
        return prune(_with_entity(state, Entity(name=e.name, fields=kept)))


class RenameField(msgspec.Struct, frozen=True, tag="rename_field"):
    entity: str
    old: str
    new: str

    def validate(self, state: State) -> None:
        e = _entity(state, self.entity)
        _need(e.field(self.old) is not None, f"{self.entity} has no field {self.old!r}")
        _need(is_snake(self.new) and self.new != "id", f"field name {self.new!r} must be snake_case and not 'id'")
        _need(e.field(self.new) is None, f"{self.entity} already has a field {self.new!r}")

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
        e = _entity(state, self.entity)
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
            owner = _entity(state, a.entity)  # looked up in the old state: links still use old names
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
        new_state = _with_entity(state, renamed)
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
        e = _entity(state, self.entity)
        f = e.field(self.field)
        _need(f is not None, f"{self.entity} has no field {self.field!r}")
        assert f is not None
        _need(f.kind in ("integer", "float", "string", "datetime"), f"{self.field} has no bounds to change")
        numeric = (self.minimum, self.maximum)
        lengths = (self.min_length, self.max_length)
        dates = (self.after, self.before)
        mine = numeric if f.kind in NUMERIC_KINDS else lengths if f.kind == "string" else dates
        others = [v for group in (numeric, lengths, dates) if group is not mine for v in group]
        _need(all(v is None for v in others), f"bounds given do not apply to a {f.kind} field")
        _need(any(v is not None for v in mine), "a constraint change must set at least one bound")
        if f.kind == "integer":
            _need(all(v is None or isinstance(v, int) for v in numeric), "integer bounds must be integers")
        lo, hi = mine
        _need(lo is None or hi is None or lo <= hi, "the lower bound is above the upper bound")  # type: ignore[operator]
        nf = self._new_field(f)
        _need(not nf.has_default or scalar_fits(state, nf, nf.default), "the field's default would break the bounds")
        _need(nf != f, "the constraints are unchanged")

    def apply(self, state: State) -> State:
        e = _entity(state, self.entity)
        return _with_entity(
            state,
            Entity(name=e.name, fields=tuple(self._new_field(f) if f.name == self.field else f for f in e.fields)),
        )


class AddAnalytics(msgspec.Struct, frozen=True, tag="add_analytics"):
    analytics: Analytics

    def validate(self, state: State) -> None:
        _need(analytics_ok(state, self.analytics), f"{self.analytics.path()} is not over a numeric field")
        _need(all(a.path() != self.analytics.path() for a in state.analytics), f"{self.analytics.path()} exists")

    def apply(self, state: State) -> State:
        return state.evolve(analytics=(*state.analytics, self.analytics))


class DeleteAnalytics(msgspec.Struct, frozen=True, tag="delete_analytics"):
    analytics: Analytics

    def validate(self, state: State) -> None:
        _need(self.analytics in state.analytics, f"{self.analytics.path()} does not exist")

    def apply(self, state: State) -> State:
        return state.evolve(analytics=tuple(a for a in state.analytics if a != self.analytics))


class AddAction(msgspec.Struct, frozen=True, tag="add_action"):
    action: Action

    def validate(self, state: State) -> None:
        a = self.action
        entity = _entity(state, a.entity)
        _need(is_snake(a.name), f"action name {a.name!r} must be snake_case")
        _need(state.action(a.entity, a.name) is None, f"{a.entity}.{a.name} already exists")
        _need(action_core_ok(state, a), f"{a.entity}.{a.field} is not an enum holding the action's values")
        _need(a.target not in a.sources, "an action must move the field to a value outside its sources")
        _need(len(set(a.sources)) == len(a.sources), "source values must be unique")
        _need(all(condition_ok(state, entity, c) for c in a.conditions), "a guard condition is ill-typed")
        _need(all(effect_ok(state, entity, x, a.field) for x in a.effects), "an effect is ill-typed")

    def apply(self, state: State) -> State:
        return state.with_added_action(self.action)


def _action(state: State, entity: str, name: str) -> Action:
    a = state.action(entity, name)
    _need(a is not None, f"action {entity}.{name} does not exist")
    assert a is not None
    return a


def _with_action(state: State, a: Action) -> State:
    return state.with_action(a)


class RemoveAction(msgspec.Struct, frozen=True, tag="remove_action"):
    entity: str
    name: str

    def validate(self, state: State) -> None:
        _action(state, self.entity, self.name)

    def apply(self, state: State) -> State:
        return msgspec.structs.replace(
            state, actions=tuple(a for a in state.actions if not (a.entity == self.entity and a.name == self.name))
        )


class AddCondition(msgspec.Struct, frozen=True, tag="add_condition"):
    entity: str
    action: str
    condition: Condition

    def validate(self, state: State) -> None:
        a = _action(state, self.entity, self.action)
        _need(self.condition not in a.conditions, "the action already has this condition")
        _need(condition_ok(state, _entity(state, self.entity), self.condition), "the condition is ill-typed")

    def apply(self, state: State) -> State:
        a = _action(state, self.entity, self.action)
        return _with_action(state, msgspec.structs.replace(a, conditions=(*a.conditions, self.condition)))


class RemoveCondition(msgspec.Struct, frozen=True, tag="remove_condition"):
    entity: str
    action: str
    condition: Condition

    def validate(self, state: State) -> None:
        _need(self.condition in _action(state, self.entity, self.action).conditions, "no such condition")

    def apply(self, state: State) -> State:
        a = _action(state, self.entity, self.action)
        return _with_action(
            state, msgspec.structs.replace(a, conditions=tuple(c for c in a.conditions if c != self.condition))
        )


class AddEffect(msgspec.Struct, frozen=True, tag="add_effect"):
    entity: str
    action: str
    effect: Effect

    def validate(self, state: State) -> None:
        a = _action(state, self.entity, self.action)
        _need(self.effect not in a.effects, "the action already has this effect")
        _need(effect_ok(state, _entity(state, self.entity), self.effect, a.field), "the effect is ill-typed")

    def apply(self, state: State) -> State:
        a = _action(state, self.entity, self.action)
        return _with_action(state, msgspec.structs.replace(a, effects=(*a.effects, self.effect)))


class RemoveEffect(msgspec.Struct, frozen=True, tag="remove_effect"):
    entity: str
    action: str
    effect: Effect

    def validate(self, state: State) -> None:
        _need(self.effect in _action(state, self.entity, self.action).effects, "no such effect")

    def apply(self, state: State) -> State:
        a = _action(state, self.entity, self.action)
        return _with_action(state, msgspec.structs.replace(a, effects=tuple(x for x in a.effects if x != self.effect)))


class AddEnumValue(msgspec.Struct, frozen=True, tag="add_enum_value"):
    enum: str
    value: str

    def validate(self, state: State) -> None:
        en = state.enum(self.enum)
        _need(en is not None, f"enum type {self.enum!r} does not exist")
        assert en is not None
        _need(is_snake(self.value), f"enum value {self.value!r} must be snake_case")
        _need(self.value not in en.values, f"{self.enum} already has {self.value!r}")

    def apply(self, state: State) -> State:
        en = state.enum(self.enum)
        assert en is not None
        new = EnumType(name=en.name, values=(*en.values, self.value))
        return state.evolve(enums=_replace(state.enums, lambda x: x.name == self.enum, new))


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
