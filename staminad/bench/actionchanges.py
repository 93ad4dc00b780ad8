"""The changes of actions: add and remove an action, a guard condition or an effect (see `changes`)."""

from __future__ import annotations

import msgspec

from staminad.bench.changebase import entity_named, need
from staminad.bench.integrity import action_core_ok, condition_ok, effect_ok
from staminad.bench.schema import (
    Action,
    Condition,
    Effect,
    State,
    is_snake,
)


class AddAction(msgspec.Struct, frozen=True, tag="add_action"):
    action: Action

    def validate(self, state: State) -> None:
        a = self.action
        entity = entity_named(state, a.entity)
        need(is_snake(a.name), f"action name {a.name!r} must be snake_case")
        need(state.action(a.entity, a.name) is None, f"{a.entity}.{a.name} already exists")
        need(action_core_ok(state, a), f"{a.entity}.{a.field} is not an enum holding the action's values")
        need(a.target not in a.sources, "an action must move the field to a value outside its sources")
        need(len(set(a.sources)) == len(a.sources), "source values must be unique")
        need(all(condition_ok(state, entity, c) for c in a.conditions), "a guard condition is ill-typed")
        need(all(effect_ok(state, entity, x, a.field) for x in a.effects), "an effect is ill-typed")

    def apply(self, state: State) -> State:
        return state.with_added_action(self.action)


def _action(state: State, entity: str, name: str) -> Action:
    a = state.action(entity, name)
    need(a is not None, f"action {entity}.{name} does not exist")
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
        need(self.condition not in a.conditions, "the action already has this condition")
        need(condition_ok(state, entity_named(state, self.entity), self.condition), "the condition is ill-typed")

    def apply(self, state: State) -> State:
        a = _action(state, self.entity, self.action)
        return _with_action(state, msgspec.structs.replace(a, conditions=(*a.conditions, self.condition)))


class RemoveCondition(msgspec.Struct, frozen=True, tag="remove_condition"):
    entity: str
    action: str
    condition: Condition

    def validate(self, state: State) -> None:
        need(self.condition in _action(state, self.entity, self.action).conditions, "no such condition")

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
        need(self.effect not in a.effects, "the action already has this effect")
        need(effect_ok(state, entity_named(state, self.entity), self.effect, a.field), "the effect is ill-typed")

    def apply(self, state: State) -> State:
        a = _action(state, self.entity, self.action)
        return _with_action(state, msgspec.structs.replace(a, effects=(*a.effects, self.effect)))


class RemoveEffect(msgspec.Struct, frozen=True, tag="remove_effect"):
    entity: str
    action: str
    effect: Effect

    def validate(self, state: State) -> None:
        need(self.effect in _action(state, self.entity, self.action).effects, "no such effect")

    def apply(self, state: State) -> State:
        a = _action(state, self.entity, self.action)
        return _with_action(state, msgspec.structs.replace(a, effects=tuple(x for x in a.effects if x != self.effect)))
