"""Data that gives a computation a null target, or a `for each` an empty list its guards allow.

`effectdata` shapes the usual null and empty inputs; this module adds the cases it leaves out, each
at every turn the computation exists (so at its first turn too), with what the README says of it:

- "null_targets": the field `set this.x to this.a op this.b` writes is null before the action (one
  test per computation). Where the target is also an operand, the computation has a null input and
  must change nothing ("An effect whose input value is null changes nothing"); where it is not, the
  operands hold values and the result must be stored over the null.
- "empty" (added to `effectdata`'s): a `for each` whose list a guard reads walks an empty list where
  every guard on the list holds for one (`all of`, and `count(...)` or `sum(...)` compared so that
  0 passes): the action succeeds and the effect reaches nothing.
- `distinct_target`: under "null_operands", the target's value differs from 0 and from the other
  operand's value and its negation, so a computation that ran anyway (reading the null as some
  number) could not leave the same value by chance.
"""

from __future__ import annotations

import random
from typing import Any

from staminad.bench.parts import condition_fields
from staminad.bench.schema import (
    Action,
    Compare,
    Compute,
    Condition,
    CountOperand,
    Entity,
    ForEach,
    NullCheck,
    Quantified,
    State,
    SumOperand,
)
from staminad.suite.data import scalar_value
from staminad.suite.plans import Plan, can_be_null, set_null
from staminad.suite.semantics import compare

_TRIES = 20


def holds_empty(cond: Condition, link: str) -> bool:
    """Whether `cond`, where it reads the list `link`, holds when that list is empty (True if it does not read it)."""
    if isinstance(cond, Quantified) and cond.list_field == link:
        return cond.quantifier == "all"
    if isinstance(cond, Compare) and isinstance(cond.left, CountOperand | SumOperand) and cond.left.list_field == link:
        return compare(0, cond.op, cond.value)
    if isinstance(cond, NullCheck) and cond.field == link:
        return not cond.is_null  # a list is never null
    return True


def empty_allowed(action: Action, link: str) -> bool:
    """Every guard of the action that reads the list `link` holds for an empty list."""
    return all(holds_empty(c, link) for c in action.conditions)


def empty_guarded_lists(entity: Entity, action: Action, plan: Plan, guarded: set[str]) -> bool:
    """Under "empty", a `for each` over a list the guards read walks an empty list where they allow one."""
    changed = False
    for x in action.effects:
        if not isinstance(x, ForEach) or x.list_field not in guarded or not empty_allowed(action, x.list_field):
            continue
        f = entity.field(x.list_field)
        if f is not None and f.kind == "ref_list":
            plan.body[f.name] = []
            plan.classes.add("empty_list")
            changed = True
    return changed


def null_target_free(action: Action, entity: Entity, name: str) -> bool:
    """The own field `name` can be null before the action while its guards hold: a client can make it null and
    no guard reads it other than `this.name is null`."""
    f = entity.field(name)
    if f is None or name == action.field or not can_be_null(f):
        return False
    return all(name not in condition_fields(c) or (isinstance(c, NullCheck) and c.is_null) for c in action.conditions)


def null_target(
    rng: random.Random, state: State, entity: Entity, action: Action, plan: Plan, guarded: set[str], only: int
) -> bool:
    """Under "null_targets", the field computation `only` writes starts null; its other operands hold values
    where the guards leave them free, so the null target alone decides what the computation does."""
    x = action.effects[only]
    if not isinstance(x, Compute) or not null_target_free(action, entity, x.field):
        return False
    t = entity.field(x.field)
    assert t is not None
    for name in (x.left, x.right):
        o = entity.field(name)
        if o is not None and name != x.field and name not in guarded and plan.body.get(name) is None:
            plan.body[name] = scalar_value(rng, state, o)
    set_null(plan.body, t)
    plan.classes.add("null_target")
    return True


def distinct_target(
    rng: random.Random, state: State, entity: Entity, x: Compute, plan: Plan, guarded: set[str]
) -> None:
    """Under "null_operands", give the target (where the guards leave it free) a value other than 0, the other
    operand's value and its negation: what the computation would leave had it read the null as a number."""
    t = entity.field(x.field)
    if t is None or x.field in guarded or t.kind not in ("integer", "float"):
        return
    others = [plan.body.get(n) for n in (x.left, x.right) if n != x.field]
    avoid: set[Any] = {0}
    for v in others:
        if isinstance(v, int | float) and not isinstance(v, bool):
            avoid |= {v, -v}
    if plan.body.get(t.name) is not None and plan.body[t.name] not in avoid:
        return
    for _ in range(_TRIES):
        v = scalar_value(rng, state, t)
        if v is not None and v not in avoid:
            plan.body[t.name] = v
            return
