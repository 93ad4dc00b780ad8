"""When a state can show a bug of an action's effects (increase, set, compute, on the referenced, for each): the
`exercised` predicates of those mutants, read from the schema alone as `exercised` reads guards and analytics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from staminad.bench.parts import condition_fields, set_before
from staminad.bench.schema import (
    NUMERIC_KINDS,
    Action,
    ArithOperand,
    Compare,
    Compute,
    CountOperand,
    Effect,
    Entity,
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
)
from staminad.reference.exercised import (
    ARITH,
    actions,
    compare,
    guarded,
    link_target,
    nullable,
    others_hold,
    values,
)


def writes(x: Effect) -> tuple[str, str] | None:
    """(scope, field) an effect writes; scope "" is the acted-on entity, else the link field."""
    if isinstance(x, SetValue | Increment | Compute):
        return "", x.field
    return (x.ref_field if isinstance(x, OnReference) else x.list_field), x.effect.field


def null_free(action: Action, field: str) -> bool:
    """No guard pins the field to a value: none reads it, or only `this.field is null` does."""
    return all(field not in condition_fields(c) or (isinstance(c, NullCheck) and c.is_null) for c in action.conditions)


def _free_link(action: Action, link: str) -> bool:
    """A guard reading the link leaves its targets free only as `this.r is not null`."""
    return all(
        link not in condition_fields(c) or (isinstance(c, NullCheck) and not c.is_null) for c in action.conditions
    )


def _reached(state: State, e: Entity, action: Action) -> Iterator[tuple[OnReference | ForEach, Entity]]:
    for x in action.effects:
        if isinstance(x, OnReference | ForEach):
            link = x.ref_field if isinstance(x, OnReference) else x.list_field
            t = link_target(state, e, link)
            free = _free_link(action, link) if isinstance(x, OnReference) else link not in guarded(action)
            if t is not None and free:
                yield x, t


def _nullable_operand(action: Action, e: Entity, x: Compute) -> bool:
    """An operand other than the target can be null when `x` runs: the guards leave it free (none reads
    it, or `is null` does) and no earlier effect sets it to a value."""
    earlier = action.effects[: action.effects.index(x)]
    return any(
        o != x.field
        and null_free(action, o)
        and nullable(e.field(o))
        and not any(isinstance(y, SetValue) and y.field == o and y.value is not None for y in earlier)
        for o in (x.left, x.right)
    )


def _overwritten(action: Action, e: Entity, x: Effect, before: bool) -> bool:
    """Another effect writes what `x` writes with a value of its own: a literal, or a computation
    whose operands cannot be made null (`before`: also count earlier ones, which give `x` a non-null input)."""
    i = action.effects.index(x)
    for j, y in enumerate(action.effects):
        if j == i or (j < i and not before) or writes(y) != writes(x):
            continue
        if isinstance(y, SetValue) or (isinstance(y, OnReference | ForEach) and isinstance(y.effect, SetValue)):
            return True
        # A computation writes a value only when no operand can be null; a later one reading the field
        # itself carries what `x` left there.
        if isinstance(y, Compute):
            ops = (y.left, y.right)
            if not any(null_free(action, o) and nullable(e.field(o)) for o in ops) and (j < i or y.field not in ops):
                return True
    return False


def increase_null(state: State) -> bool:
    for a, e in actions(state):
        if not others_hold(state, e, a):
            continue
        for x in a.effects:
            if (
                isinstance(x, Increment)
                and null_free(a, x.field)
                and nullable(e.field(x.field))
                and not _overwritten(a, e, x, True)
            ):
                return True
        if any(
            isinstance(x.effect, Increment) and nullable(t.field(x.effect.field)) and not _overwritten(a, e, x, True)
            for x, t in _reached(state, e, a)
        ):
            return True
        if any(_null_in_guarded_list(state, e, a, x) for x in a.effects):
            return True
    return False


def _null_in_guarded_list(state: State, e: Entity, a: Action, x: Effect) -> bool:
    """A `for each` increase over a list the guards read can meet a listed entity whose field is null: the
    list can hold entities and no `all of` guard needs a value in that field."""
    if not isinstance(x, ForEach) or not isinstance(x.effect, Increment) or x.list_field not in guarded(a):
        return False
    t = link_target(state, e, x.list_field)
    return (
        t is not None
        and nullable(t.field(x.effect.field))
        and _listed_nonempty(state, e, a, x.list_field)
        and not _overwritten(a, e, x, True)
        and not any(
            isinstance(c, Quantified)
            and c.list_field == x.list_field
            and c.quantifier == "all"
            and c.field == x.effect.field
            for c in a.conditions
        )
    )


def compute_null(state: State) -> bool:
    for a, e in actions(state):
        if others_hold(state, e, a) and any(
            isinstance(x, Compute)
            and not _overwritten(a, e, x, False)
            and not (x.field in guarded(a) and null_free(a, x.field))
            and _nullable_operand(a, e, x)
            for x in a.effects
        ):
            return True
    return False


def _assignment_ok(action: Action, assign: dict[str, object]) -> bool:
    """The guards reading only assigned fields hold on them (the others are decided elsewhere)."""
    for c in action.conditions:
        if not condition_fields(c) <= set(assign):
            continue
        if isinstance(c, NullCheck):
            ok = (assign[c.field] is None) == c.is_null
        elif isinstance(c, Compare) and isinstance(c.left, FieldOperand):
            ok = compare(assign[c.left.field], c.op, c.value)
        elif isinstance(c, Compare) and isinstance(c.left, ArithOperand):
            ok = compare(ARITH[c.left.op](assign[c.left.left], assign[c.left.right]), c.op, c.value)
        else:
            continue
        if not ok:
            return False
    return True


def _probes(state: State, action: Action, f: Field) -> list[Any]:
    lits = [c.value for c in action.conditions if f.name in condition_fields(c) and isinstance(c, Compare)]
    return list(dict.fromkeys(v for lit in [None, *lits] for v in values(state, f, lit)))


def _outside(f: Field, r: float) -> bool:
    return (f.minimum is not None and r < f.minimum) or (f.maximum is not None and r > f.maximum)


def _increment_crosses(state: State, e: Entity, a: Action, x: Increment) -> bool:
    f = e.field(x.field)
    if f is None or f.kind not in NUMERIC_KINDS:
        return False
    return any(
        isinstance(v, int | float) and _outside(f, v + x.amount) and _assignment_ok(a, {f.name: v})
        for v in _probes(state, a, f)
    )


def _compute_crosses(state: State, e: Entity, a: Action, x: Compute) -> bool:
    t, fa, fb = e.field(x.field), e.field(x.left), e.field(x.right)
    if t is None or fa is None or fb is None or (t.minimum is None and t.maximum is None):
        return False
    preset = set_before(a, x)  # an operand an earlier `set` fixed computes with that value
    for va in _probes(state, a, fa):
        for vb in _probes(state, a, fb):
            if fa is fb and va != vb:
                continue
            r = ARITH[x.op](preset.get(fa.name, va), preset.get(fb.name, vb))
            if _outside(t, r) and _assignment_ok(a, {fa.name: va, fb.name: vb}):
                return True
    return False


def clamped(state: State) -> bool:
    for a, e in actions(state):
        if not others_hold(state, e, a):
            continue
        for x in a.effects:
            if _overwritten(a, e, x, False):
                continue
            if isinstance(x, Increment) and _increment_crosses(state, e, a, x):
                return True
            if isinstance(x, Compute) and _compute_crosses(state, e, a, x):
                return True
        if any(
            isinstance(x.effect, Increment)
            and _past_bound(t.field(x.effect.field), x.effect.amount)
            and not _overwritten(a, e, x, False)
            for x, t in _reached(state, e, a)
        ):
            return True
    return False


def _past_bound(f: Field | None, amount: int | float) -> bool:
    return f is not None and ((amount > 0 and f.maximum is not None) or (amount < 0 and f.minimum is not None))


def on_ref_null(state: State) -> bool:
    return any(
        others_hold(state, e, a) and any(isinstance(x, OnReference) and null_free(a, x.ref_field) for x in a.effects)
        for a, e in actions(state)
    )


def _shows_on(state: State, t: Entity, inner: SetValue | Increment, a: Action | None = None, link: str = "") -> bool:
    """Applying `inner` to a reached entity can change it: a set to a field that can hold another value
    (one every `all of` guard on the list allows), or an increase of a number."""
    g = t.field(inner.field)
    if g is None:
        return False
    if isinstance(inner, Increment):
        return g.kind in NUMERIC_KINDS and inner.amount != 0
    alls = [
        c
        for c in (a.conditions if a else ())
        if isinstance(c, Quantified) and c.list_field == link and c.quantifier == "all" and c.field == g.name
    ]
    if not alls and nullable(g):
        return True
    lits = [c.value for c in alls]
    return any(
        v != inner.value and all(compare(v, c.op, c.value) for c in alls)
        for lit in [None, *lits]
        for v in values(state, g, lit)
    )


def _listed_nonempty(state: State, e: Entity, a: Action, link: str) -> bool:
    """The guards on list `link` can hold with at least one entity in it."""
    t = link_target(state, e, link)
    for c in a.conditions:
        if link not in condition_fields(c):
            continue
        if isinstance(c, Quantified):
            g = t.field(c.field) if t else None
            if g is None or not any(compare(v, c.op, c.value) for v in values(state, g, c.value)):
                return False
        elif isinstance(c, Compare) and isinstance(c.left, CountOperand):
            if not any(compare(k, c.op, c.value) for k in range(1, 5)):
                return False
        elif isinstance(c, Compare) and isinstance(c.left, SumOperand):
            g = t.field(c.left.field) if t else None
            vs = [v for v in values(state, g, c.value) if isinstance(v, int | float)] if g else []
            if not any(compare(x, c.op, c.value) for x in {*vs, *(p + q for p in vs for q in vs)}):
                return False
    return True


def ref_effect_shows(state: State) -> bool:
    """An effect on a referenced or listed entity can change it while the guards hold (skipping it shows)."""
    for a, e in actions(state):
        if not others_hold(state, e, a):
            continue
        for x in a.effects:
            if not isinstance(x, OnReference | ForEach):
                continue
            link = x.ref_field if isinstance(x, OnReference) else x.list_field
            t = link_target(state, e, link)
            if t is None:
                continue
            if isinstance(x, OnReference):
                if _free_link(a, link) and _shows_on(state, t, x.effect):
                    return True
            elif _listed_nonempty(state, e, a, link) and _shows_on(state, t, x.effect, a, link):
                return True
    return False


def _two_listed(state: State, e: Entity, a: Action, link: str) -> bool:
    """The guards on list `link` can hold with two or more entities in it."""
    for c in a.conditions:
        if link not in condition_fields(c):
            continue
        if isinstance(c, Quantified):
            t = link_target(state, e, link)
            g = t.field(c.field) if t else None
            if g is None or not any(compare(v, c.op, c.value) for v in values(state, g, c.value)):
                return False
        elif (
            isinstance(c, Compare)
            and isinstance(c.left, CountOperand)
            and not any(compare(k, c.op, c.value) for k in range(2, 5))
        ):
            return False
    return True


def for_each_two(state: State) -> bool:
    return any(
        others_hold(state, e, a)
        and any(
            isinstance(x, ForEach)
            and _two_listed(state, e, a, x.list_field)
            and not _overwritten(a, e, x, False)
            and _reaches_changed(state, e, a, x)
            for x in a.effects
        )
        for a, e in actions(state)
    )


def _reaches_changed(state: State, e: Entity, a: Action, x: ForEach) -> bool:
    t = link_target(state, e, x.list_field)
    return t is not None and _shows_on(state, t, x.effect, a, x.list_field)
