"""Data that makes an action's effects show what they do: results past a bound, null inputs, no targets.

An action test first shapes the acted-on entity for its guards (`plans.shape`); `meet_effects`
then sets the fields and links the effects read, in one of these modes, leaving every field a
guard reads as the guards need it:

- "plain": each cross-entity effect gets targets to act on (one referenced entity, two listed);
- "bounds": numeric inputs sit on the bound their effect pushes past (the result must be stored
  anyway; a decrease without a lower bound starts at 0; an operand an earlier `set` fixes counts
  with that value; data an earlier effect placed is kept where a crossing still exists), and a
  `set` effect's fields, on guard-linked targets and guarded own fields too (with a value the
  guards allow), start from another value, so that doing it shows;
- "nulls": the inputs of increases and decreases are null (own fields, a listed or referenced
  entity's field, the first entity a guard linked), and an effect whose input is null must change nothing;
  the fields `set ... to ...` writes start null too (a set writes whatever was there, null included);
- "null_operands": one operand of one computation (a test per computation) is null and its target
  holds a value (apart from "nulls", since a null target would hide a computation that writes null);
- "empty": references are null and lists empty, so cross-entity effects have nothing to reach.
"""

from __future__ import annotations

import random
from itertools import product
from typing import Any

from staminad.bench.parts import condition_fields, set_before
from staminad.bench.schema import (
    NUMERIC_KINDS,
    Action,
    Compare,
    Compute,
    Entity,
    Field,
    ForEach,
    Increment,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
)
from staminad.bench.values import scalar_fits
from staminad.suite.data import other_value, scalar_value, stored
from staminad.suite.plans import NULL, Plan, can_be_null, extremes, set_null
from staminad.suite.semantics import ARITH, compare, holds

MODES = ("plain", "bounds", "nulls", "null_operands", "empty")


def push_bound(f: Field, amount: int | float) -> int | float | None:
    """The bound of `f` that adding `amount` pushes past, if it has one."""
    if f.kind not in NUMERIC_KINDS:
        return None
    return f.maximum if amount > 0 else f.minimum if amount < 0 else None


def _crossing_starts(state: State, f: Field, amount: int | float) -> list[int | float]:
    """Valid starting values from which adding `amount` leaves the field's bounds (nearest the bound first)."""
    bound = push_bound(f, amount)
    if bound is None:  # no bound to leave: a decrease still goes below 0, which nothing may stop
        return [0] if amount < 0 and f.kind in NUMERIC_KINDS and scalar_fits(state, f, 0) else []
    if f.kind == "integer":
        return [bound - d * (1 if amount > 0 else -1) for d in range(0, max(1, int(abs(amount))))]
    return [bound, round(bound - amount / 2, 2)]


def _fits(state: State, entity: Entity, action: Action, body: dict[str, Any], names: set[str]) -> bool:
    """The guards reading any of `names` hold on `body` (they read only scalar fields of the entity)."""
    obj = stored(state, entity, body)
    return all(holds({}, state, entity, obj, c) for c in action.conditions if condition_fields(c) & names)


def outside_result(
    state: State,
    entity: Entity,
    action: Action,
    x: Compute,
    body: dict[str, Any],
    probes: dict[str, list[Any]],
    preset: dict[str, Any] | None = None,
) -> tuple[Any, Any] | None:
    """Valid (left, right) values, meeting the guards on them, whose result leaves the target's bounds
    (an operand in `preset`, set by an earlier effect, computes with that value instead)."""
    preset = preset or {}
    t, fa, fb = entity.field(x.field), entity.field(x.left), entity.field(x.right)
    if t is None or fa is None or fb is None or (t.minimum is None and t.maximum is None):
        return None
    # + and - are monotone and * is bilinear, so the result's extremes lie at the ends of what the
    # operands may be: their bounds, or the literals of the guards that limit them.
    for a, b in product(probes[fa.name], probes[fb.name]):
        if (fa is fb and a != b) or not (scalar_fits(state, fa, a) and scalar_fits(state, fb, b)):
            continue
        r = ARITH[x.op](preset.get(fa.name, a), preset.get(fb.name, b))
        outside = (t.minimum is not None and r < t.minimum) or (t.maximum is not None and r > t.maximum)
        if outside and _fits(state, entity, action, {**body, fa.name: a, fb.name: b}, {fa.name, fb.name}):
            return a, b
    return None


def probe_values(action: Action, f: Field) -> list[Any]:
    """A numeric field's ends, 0, and the neighbourhood of every guard literal of the action."""
    pts: list[Any] = [*extremes(f), 0, 1, -1]
    for c in action.conditions:
        if f.name in condition_fields(c) and isinstance(c, Compare) and isinstance(c.value, int | float):
            v = c.value
            pts += [v, v - 1, v + 1, round(v - 0.01, 2), round(v + 0.01, 2)]
    return [int(p) if f.kind == "integer" and float(p).is_integer() else p for p in dict.fromkeys(pts)]


def _start_for(rng: random.Random, state: State, target: Entity, inner: SetValue | Increment, mode: str) -> Any:
    """What a reached entity's field should start at under `mode` (None: leave it as drawn)."""
    g = target.field(inner.field)
    if g is None:
        return None
    if mode == "nulls":
        return NULL if can_be_null(g) else None
    if mode != "bounds":
        return None
    if isinstance(inner, Increment):
        return next(iter(_crossing_starts(state, g, inner.amount)), None)
    if g.kind in ("string", "integer", "float", "boolean", "enum", "datetime"):
        return other_value(rng, state, g, inner.value)
    return None


def _listed(
    rng: random.Random,
    state: State,
    action: Action,
    plan: Plan,
    f: Field,
    x: ForEach | OnReference,
    guard_fields: set[str],
) -> bool:
    """Entities a guard already linked from `f` (in a list, or `this.r is not null`): start the effect's
    field from another value than it sets."""
    if not isinstance(x.effect, SetValue):
        return False
    name = x.effect.field
    alls = [
        c
        for c in action.conditions
        if isinstance(c, Quantified) and c.list_field == f.name and c.quantifier == "all" and c.field == name
    ]
    others = [
        c
        for c in action.conditions
        if (isinstance(c, Quantified) and c.list_field == f.name and c.quantifier == "any" and c.field == name)
        or (
            isinstance(c, Compare)
            and isinstance(c.left, SumOperand)
            and c.left.list_field == f.name
            and c.left.field == name
        )
    ]
    if others:  # a sum or `any of` guard on it: keep what it drew
        return False
    linked = plan.body.get(f.name)
    ids = set(linked if isinstance(linked, list) else [linked] if linked is not None else [])
    changed = False
    for target, body in plan.related:
        g = target.field(name)
        if body["id"] in ids and g is not None and target.name == f.target:
            for _ in range(20):  # another value, one every `all of` guard on the list still allows
                other = other_value(rng, state, g, x.effect.value)
                if other is not None and all(compare(other, c.op, c.value) for c in alls):
                    body[g.name] = other
                    changed = True
                    break
    return changed


def _null_linked(action: Action, plan: Plan, f: Field, x: ForEach | OnReference) -> bool:
    """The first entity a guard already linked from `f`: make the field an increase reads null, unless an
    `all of` guard needs a value there (the others still see theirs, and the semantics re-checks the guards)."""
    if not isinstance(x.effect, Increment) or any(
        isinstance(c, Quantified) and c.list_field == f.name and c.quantifier == "all" and c.field == x.effect.field
        for c in action.conditions
    ):
        return False
    linked = plan.body.get(f.name)
    ids = linked if isinstance(linked, list) else [linked] if linked is not None else []
    for target, body in plan.related:
        g = target.field(x.effect.field)
        if ids and body["id"] == ids[0] and g is not None and target.name == f.target and can_be_null(g):
            set_null(body, g)
            plan.classes.add("null_increase")
            return True
    return False


def meet_effects(
    rng: random.Random,
    state: State,
    entity: Entity,
    action: Action,
    plan: Plan,
    guarded: set[str],
    mode: str,
    only: int | None = None,
) -> bool:
    """Shape `plan` for the action's effects under `mode`; True when the mode changed anything.

    With `only`, "null_operands" gives a null operand to that effect alone (one test per computation,
    so a later one reading a nulled field cannot hide an earlier one)."""
    changed = False
    fixed: set[str] = set()  # fields an earlier effect's data already set: later ones keep them
    links: dict[str, list[dict[str, Any]]] = {}
    for k, x in enumerate(action.effects):
        if mode == "null_operands" and only is not None and k != only:
            continue
        if (
            mode == "bounds"
            and isinstance(x, Increment | Compute)
            and any(isinstance(y, SetValue) and y.field == x.field for y in action.effects[k + 1 :])
        ):
            continue  # a later `set` hides where this one lands
        if (isinstance(x, Increment) and mode in ("bounds", "nulls")) or (
            isinstance(x, Compute) and mode in ("bounds", "null_operands")
        ):
            changed |= _own(rng, state, entity, action, x, plan, guarded, mode, fixed)
        elif isinstance(x, SetValue) and mode == "nulls":
            changed |= _null_set(entity, action, x, plan, guarded)
        elif isinstance(x, SetValue) and mode == "bounds" and x.field not in fixed:
            other = _other_start(rng, state, entity, action, plan, x, guarded)
            if other is not None:  # start from another value, so that setting it shows
                plan.body[x.field] = other
                fixed.add(x.field)
                changed = True
        elif isinstance(x, OnReference | ForEach):
            changed |= _linked(rng, state, entity, action, plan, x, guarded, mode, links)
    for name, slots in links.items():
        f = entity.field(name)
        assert f is not None
        plan.link(rng, state, f, slots)
    return changed


def _linked(
    rng: random.Random,
    state: State,
    entity: Entity,
    action: Action,
    plan: Plan,
    x: OnReference | ForEach,
    guarded: set[str],
    mode: str,
    links: dict[str, list[dict[str, Any]]],
) -> bool:
    """`meet_effects` for an effect on referenced entities: the linked entities' data (in `links`, linked at the
    end), or the guarded link's own; True when it changed anything."""
    changed = False
    f = entity.field(x.ref_field if isinstance(x, OnReference) else x.list_field)
    if f is not None and f.name in guarded and mode == "bounds":
        changed |= _listed(rng, state, action, plan, f, x, _item_fields(action, f.name))
    if f is not None and f.name in guarded and mode == "nulls":
        changed |= _null_linked(action, plan, f, x)
    if f is None or f.name in guarded or (f.name in plan.body and f.name not in links):
        return changed
    target = state.entity(f.target or "")
    assert target is not None
    if mode == "empty":
        plan.body[f.name] = [] if f.kind == "ref_list" else None
        plan.classes.add("empty_list" if isinstance(x, ForEach) else "null_reference")
        links.pop(f.name, None)
        return True
    slots = links.setdefault(f.name, [{}] if f.kind == "ref" else [{}, {}])
    for k, slot in enumerate(slots):  # the second listed entity keeps a drawn number
        start = _start_for(rng, state, target, x.effect, mode)
        if start is not None and x.effect.field not in slot and (k == 0 or isinstance(x.effect, SetValue)):
            slot[x.effect.field] = start
            changed = True
            if start is NULL:
                plan.classes.add("null_increase" if isinstance(x.effect, Increment) else "set_from_null")
    return changed


def _null_set(entity: Entity, action: Action, x: SetValue, plan: Plan, guarded: set[str]) -> bool:
    """Under "nulls", the own field a `set` writes starts null where the guards leave it free."""
    f = entity.field(x.field)
    if f is None or f.name in guarded or f.name == action.field or not can_be_null(f):
        return False
    set_null(plan.body, f)
    plan.classes.add("set_from_null")
    return True


def _other_start(
    rng: random.Random, state: State, entity: Entity, action: Action, plan: Plan, x: SetValue, guarded: set[str]
) -> Any | None:
    """A start for the field `x` sets, other than what it sets (None: none needed or none found). A field
    the guards read keeps its value where that already differs, else takes one the guards still allow."""
    f = entity.field(x.field)
    if f is None:
        return None
    if x.field not in guarded:
        return other_value(rng, state, f, x.value)
    if stored(state, entity, plan.body).get(x.field) != x.value:
        return None
    for _ in range(20):
        other = other_value(rng, state, f, x.value)
        if other is not None and _fits(state, entity, action, {**plan.body, f.name: other}, {f.name}):
            return other
    return None


def _item_fields(action: Action, link: str) -> set[str]:
    """Fields of listed entities that the action's guards on `link` read."""
    out: set[str] = set()
    for c in action.conditions:
        if isinstance(c, Quantified) and c.list_field == link:
            out.add(c.field)
        elif isinstance(c, Compare) and isinstance(c.left, SumOperand) and c.left.list_field == link:
            out.add(c.left.field)
    return out


def _own(
    rng: random.Random,
    state: State,
    entity: Entity,
    action: Action,
    x: Increment | Compute,
    plan: Plan,
    guarded: set[str],
    mode: str,
    fixed: set[str],
) -> bool:
    if isinstance(x, Increment):
        f = entity.field(x.field)
        if f is None:
            return False
        if mode == "nulls":
            if f.name in guarded or not can_be_null(f):
                return False
            set_null(plan.body, f)
            plan.classes.add("null_increase")
            return True
        if f.name in fixed:
            return False
        for v in _crossing_starts(state, f, x.amount):
            if scalar_fits(state, f, v) and _fits(state, entity, action, {**plan.body, f.name: v}, {f.name}):
                plan.body[f.name] = v
                fixed.add(f.name)
                return True
        return False
    fa, fb = entity.field(x.left), entity.field(x.right)
    if fa is None or fb is None:
        return False
    if mode == "null_operands":  # one operand null, the target left holding a value that must survive
        t = entity.field(x.field)
        for o in (fa, fb):
            if o.name == x.field or not can_be_null(o):
                continue
            if o.name in guarded and plan.body.get(o.name) is not None:
                continue  # a guard needs a value there
            set_null(plan.body, o)
            if t is not None and t.name not in guarded and plan.body.get(t.name) is None:
                plan.body[t.name] = scalar_value(rng, state, t)
            plan.classes.add("null_operand")
            return True
        return False
    probes = {f.name: probe_values(action, f) for f in (fa, fb)}
    kept = {f.name: [plan.body.get(f.name)] if f.name in fixed else probe_values(action, f) for f in (fa, fb)}
    # Keep what an earlier effect's data set where a crossing still exists; else move it.
    preset = set_before(action, x)
    pair = outside_result(state, entity, action, x, plan.body, kept, preset) or outside_result(
        state, entity, action, x, plan.body, probes, preset
    )
    if pair is None:
        return False
    plan.body[fa.name], plan.body[fb.name] = pair
    fixed.update((fa.name, fb.name))
    return True
