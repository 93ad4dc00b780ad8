"""Data that makes an action's effects show what they do: results past a bound, null inputs, no targets.

An action test first shapes the acted-on entity for its guards (`plans.shape`); `meet_effects`
then sets the fields and links the effects read, in one of three modes, leaving every field a
guard reads as the guards need it:

- "plain": each cross-entity effect gets targets to act on (one referenced entity, two listed);
- "bounds": numeric inputs sit on the bound their effect pushes past (the result must be stored
  anyway), and a `set` effect's targets start from another value, so that doing it shows;
- "nulls": effect inputs are null (own fields, one operand of a computation, a listed or
  referenced entity's field), and an effect whose input is null must change nothing;
- "empty": references are null and lists empty, so cross-entity effects have nothing to reach.
"""

from __future__ import annotations

import random
from itertools import product
from typing import Any

from staminad.bench.schema import (
    NUMERIC_KINDS,
    Action,
    Compute,
    Entity,
    Field,
    ForEach,
    Increment,
    OnReference,
    SetValue,
    State,
)
from staminad.bench.values import scalar_fits
from staminad.suite.data import other_value
from staminad.suite.plans import NULL, Plan, can_be_null, extremes, set_null
from staminad.suite.semantics import ARITH

MODES = ("plain", "bounds", "nulls", "empty")


def push_bound(f: Field, amount: int | float) -> int | float | None:
    """The valid value of `f` from which adding `amount` leaves the field's bounds, if any."""
    if f.kind not in NUMERIC_KINDS:
        return None
    bound = f.maximum if amount > 0 else f.minimum if amount < 0 else None
    return bound


def outside_result(state: State, entity: Entity, x: Compute) -> tuple[Any, Any] | None:
    """Valid (left, right) values whose result falls outside the target field's bounds, if any."""
    t, fa, fb = entity.field(x.field), entity.field(x.left), entity.field(x.right)
    if t is None or fa is None or fb is None or (t.minimum is None and t.maximum is None):
        return None
    # + and - are monotone and * is bilinear, so the extremes of the result are at the corners.
    for a, b in product(extremes(fa), extremes(fb)):
        if fa is fb and a != b:
            continue
        if not (scalar_fits(state, fa, a) and scalar_fits(state, fb, b)):
            continue
        r = ARITH[x.op](a, b)
        if (t.minimum is not None and r < t.minimum) or (t.maximum is not None and r > t.maximum):
            return a, b
    return None


def _start_for(rng: random.Random, state: State, target: Entity, inner: SetValue | Increment, mode: str) -> Any:
    """What a reached entity's field should start at under `mode` (None: leave it as drawn)."""
    g = target.field(inner.field)
    if g is None:
        return None
    if mode == "nulls":
        return NULL if isinstance(inner, Increment) and can_be_null(g) else None
    if mode != "bounds":
        return None
    if isinstance(inner, Increment):
        return push_bound(g, inner.amount)
    if g.kind in ("string", "integer", "float", "boolean", "enum", "datetime"):
        return other_value(rng, state, g, inner.value)
    return None


def meet_effects(rng: random.Random, state: State, entity: Entity, action: Action, plan: Plan, guarded: set[str],
                 mode: str) -> bool:
    """Shape `plan` for the action's effects under `mode`; True when the mode changed anything."""
    changed = False
    links: dict[str, list[dict[str, Any]]] = {}
    for x in action.effects:
        if isinstance(x, Increment | Compute) and mode in ("bounds", "nulls"):
            changed |= _own(state, entity, x, plan, guarded, mode)
        elif isinstance(x, OnReference | ForEach):
            link = x.ref_field if isinstance(x, OnReference) else x.list_field
            f = entity.field(link)
            if f is None or f.name in guarded or (f.name in plan.body and f.name not in links):
                continue
            target = state.entity(f.target or "")
            assert target is not None
            if mode == "empty":
                plan.body[f.name] = [] if f.kind == "ref_list" else None
                links.pop(f.name, None)
                changed = True
                continue
            slots = links.setdefault(f.name, [{}] if f.kind == "ref" else [{}, {}])
            start = _start_for(rng, state, target, x.effect, mode)
            if start is not None and x.effect.field not in slots[0]:
                slots[0][x.effect.field] = start  # the second listed entity keeps a drawn value
                changed = True
    for name, slots in links.items():
        f = entity.field(name)
        assert f is not None
        plan.link(rng, state, f, slots)
    return changed


def _own(state: State, entity: Entity, x: Increment | Compute, plan: Plan, guarded: set[str], mode: str) -> bool:
    if isinstance(x, Increment):
        f = entity.field(x.field)
        if f is None or f.name in guarded:
            return False
        if mode == "nulls":
            if not can_be_null(f):
                return False
            set_null(plan.body, f)
            return True
        bound = push_bound(f, x.amount)
        if bound is None:
            return False
        plan.body[f.name] = bound
        return True
    fa, fb = entity.field(x.left), entity.field(x.right)
    if fa is None or fb is None or {fa.name, fb.name, x.field} & guarded:
        return False
    if mode == "nulls":  # one operand null, the target left holding a value that must survive
        for o in (fa, fb):
            if o.name != x.field and can_be_null(o):
                set_null(plan.body, o)
                return True
        return False
    pair = outside_result(state, entity, x)
    if pair is None:
        return False
    plan.body[fa.name], plan.body[fb.name] = pair
    return True
