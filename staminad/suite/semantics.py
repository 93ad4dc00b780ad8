"""What an action does to stored data, as the README's `guards` and `effects` rules define it.

The suite uses this to predict the outcome of an action call on the entities it created: which
status comes back and what every touched entity looks like afterwards. `World` maps an entity
name to its stored objects by id.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable
from typing import Any

from staminad.bench.schema import (
    Action,
    ArithOperand,
    Compare,
    Compute,
    Condition,
    CountOperand,
    Entity,
    FieldOperand,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
)

World = dict[str, dict[str, dict[str, Any]]]

COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
ARITH: dict[str, Callable[[Any, Any], Any]] = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _target(state: State, entity: Entity, link: str) -> str:
    f = entity.field(link)
    assert f is not None and f.target is not None
    return f.target


def _linked(world: World, state: State, entity: Entity, obj: dict[str, Any], list_field: str) -> list[dict[str, Any]]:
    table = world.get(_target(state, entity, list_field), {})
    return [table[i] for i in obj.get(list_field) or [] if i in table]


def compare(left: Any, op: str, right: Any) -> bool:
    """A comparison; false whenever a side is null."""
    if left is None or right is None:
        return False
    return COMPARE[op](left, right)


def operand_value(world: World, state: State, entity: Entity, obj: dict[str, Any], operand: object) -> Any:
    if isinstance(operand, FieldOperand):
        return obj.get(operand.field)
    if isinstance(operand, ArithOperand):
        a, b = obj.get(operand.left), obj.get(operand.right)
        return None if a is None or b is None else ARITH[operand.op](a, b)
    if isinstance(operand, CountOperand):
        return len(obj.get(operand.list_field) or [])
    assert isinstance(operand, SumOperand)
    values = [o.get(operand.field) for o in _linked(world, state, entity, obj, operand.list_field)]
    return sum(v for v in values if v is not None)


def holds(world: World, state: State, entity: Entity, obj: dict[str, Any], cond: Condition) -> bool:
    """Whether one guard holds for `obj` (an entity of type `entity`)."""
    if isinstance(cond, NullCheck):
        return (obj.get(cond.field) is None) == cond.is_null
    if isinstance(cond, Quantified):
        items = _linked(world, state, entity, obj, cond.list_field)
        results = [compare(o.get(cond.field), cond.op, cond.value) for o in items]
        return any(results) if cond.quantifier == "any" else all(results)
    assert isinstance(cond, Compare)
    return compare(operand_value(world, state, entity, obj, cond.left), cond.op, cond.value)


def _simple(obj: dict[str, Any], effect: SetValue | Increment) -> None:
    if isinstance(effect, SetValue):
        obj[effect.field] = effect.value
    elif obj.get(effect.field) is not None:
        obj[effect.field] = obj[effect.field] + effect.amount


def apply_action(world: World, state: State, action: Action, obj_id: str) -> tuple[int, World]:
    """The status an action call must return and the world after it (unchanged unless 200)."""
    entity = state.entity(action.entity)
    assert entity is not None
    table = world.get(action.entity, {})
    if obj_id not in table:
        return 404, world
    if table[obj_id].get(action.field) not in action.sources:
        return 400, world
    if not all(holds(world, state, entity, table[obj_id], c) for c in action.conditions):
        return 409, world
    new = copy.deepcopy(world)
    obj = new[action.entity][obj_id]
    for effect in action.effects:
        if isinstance(effect, SetValue | Increment):
            _simple(obj, effect)
        elif isinstance(effect, Compute):
            a, b = obj.get(effect.left), obj.get(effect.right)
            if a is not None and b is not None:
                obj[effect.field] = ARITH[effect.op](a, b)
        elif isinstance(effect, OnReference):
            ref = obj.get(effect.ref_field)
            target = new.get(_target(state, entity, effect.ref_field), {})
            if ref is not None and ref in target:
                _simple(target[ref], effect.effect)
        else:
            assert isinstance(effect, ForEach)
            target = new.get(_target(state, entity, effect.list_field), {})
            for ref in obj.get(effect.list_field) or []:
                if ref in target:
                    _simple(target[ref], effect.effect)
    obj[action.field] = action.target
    return 200, new
