"""When a state can show a bug of the action and analytics paths: the `exercised` predicates of those mutants.

Each predicate says whether some valid data on this state makes the mutant answer differently
from the README's rules, read from the schema alone (not from the suite): a guard that no valid
entity can satisfy, or an effect whose input a guard pins, shows nothing. Guards of one action
read disjoint fields, so each is decided on its own fields; numeric domains are probed at their
ends and around the literal, which decides every comparison the generator writes.
"""

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
    Condition,
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
    Scalar,
    SetValue,
    State,
    SumOperand,
)
from staminad.bench.values import scalar_fits

_ORDER = ("<", "<=", ">", ">=")
_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
FALSY: dict[str, tuple[Scalar, ...]] = {"boolean": (False,), "integer": (0,), "float": (0.0,), "string": ("",)}
_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def nullable(f: Field | None) -> bool:
    """A client can make the field read as null (send null, or omit it where no default fills it in)."""
    return f is not None and f.kind != "ref_list" and (f.nullable or (not f.required and not f.has_default))


def _cmp(a: object, op: str, b: object) -> bool:
    return a is not None and b is not None and bool(_OPS[op](a, b))


def _ends(f: Field) -> list[int | float]:
    lo = f.minimum if f.minimum is not None else min(-1000, (f.maximum or 0) - 1000)
    hi = f.maximum if f.maximum is not None else max(1000, (f.minimum or 0) + 1000)
    return [lo, hi]


def values(state: State, f: Field, around: object = None) -> list[Any]:
    """Valid non-null probe values of a field: its ends, 0 and the neighbourhood of `around`."""
    if f.kind == "boolean":
        return [True, False]
    if f.kind == "enum":
        en = state.enum(f.enum or "")
        return list(en.values) if en else []
    if f.kind in NUMERIC_KINDS:
        pts: list[int | float] = [*_ends(f), 0, 1, -1]
        if isinstance(around, int | float) and not isinstance(around, bool):
            pts += [around, around - 1, around + 1, around - 0.01, around + 0.01]
        out = [int(p) if f.kind == "integer" and float(p).is_integer() else p for p in pts]
        return [v for v in dict.fromkeys(out) if scalar_fits(state, f, v)]
    if f.kind == "string":
        return [
            v for v in (around, "", "x" * max(f.min_length or 1, 1)) if isinstance(v, str) and scalar_fits(state, f, v)
        ] + ["~different~"]
    return ["2024-01-01 00:00:00"]


def _link_target(state: State, entity: Entity, link: str) -> Entity | None:
    f = entity.field(link)
    return state.entity(f.target or "") if f else None


def can_be(state: State, entity: Entity, c: Condition, want: bool) -> bool:
    """Whether some valid entity (and referenced entities) makes guard `c` evaluate to `want`."""
    if isinstance(c, NullCheck):
        return nullable(entity.field(c.field)) if c.is_null == want else True
    if isinstance(c, Quantified):
        target = _link_target(state, entity, c.list_field)
        g = target.field(c.field) if target else None
        if g is None:
            return False
        if c.quantifier == "any":
            return (not want) or any(_cmp(v, c.op, c.value) == want for v in values(state, g, c.value))
        return want or nullable(g) or any(not _cmp(v, c.op, c.value) for v in values(state, g, c.value))
    left = c.left
    if isinstance(left, FieldOperand):
        f = entity.field(left.field)
        if f is None:
            return False
        return (not want and nullable(f)) or any(_cmp(v, c.op, c.value) == want for v in values(state, f, c.value))
    if isinstance(left, ArithOperand):
        fa, fb = entity.field(left.left), entity.field(left.right)
        if fa is None or fb is None:
            return False
        if not want and (nullable(fa) or nullable(fb)):
            return True
        pairs = (
            [(a, a) for a in values(state, fa, c.value)]
            if fa is fb
            else [(a, b) for a in values(state, fa, c.value) for b in values(state, fb, 0)]
        )
        return any(_cmp(_ARITH[left.op](a, b), c.op, c.value) == want for a, b in pairs)
    if isinstance(left, CountOperand):
        return any(_cmp(k, c.op, c.value) == want for k in range(0, 5))
    assert isinstance(left, SumOperand)
    target = _link_target(state, entity, left.list_field)
    g = target.field(left.field) if target else None
    if g is None:
        return False
    vs = [v for v in values(state, g, c.value) if isinstance(v, int | float)]
    sums = {0, *vs, *(a + b for a in vs for b in vs)}
    return any(_cmp(s, c.op, c.value) == want for s in sums)


def others_hold(state: State, entity: Entity, action: Action, skip: int | None = None) -> bool:
    return all(can_be(state, entity, c, True) for i, c in enumerate(action.conditions) if i != skip)


def guarded(action: Action) -> set[str]:
    return set().union(*(condition_fields(c) for c in action.conditions)) if action.conditions else set()


def actions(state: State) -> Iterator[tuple[Action, Entity]]:
    for a in state.actions:
        e = state.entity(a.entity)
        if e is not None:
            yield a, e


def any_guard(state: State, ok: object) -> bool:
    """Some guard i of some action satisfies `ok(state, entity, cond)` while the others can hold."""
    return any(
        ok(state, e, c) and others_hold(state, e, a, i)  # type: ignore[operator]
        for a, e in actions(state)
        for i, c in enumerate(a.conditions)
    )


def _zero_passes(c: Compare | Quantified) -> bool:
    return c.op in _ORDER and _cmp(0, c.op, c.value)


def null_ne(state: State, e: Entity, c: Condition) -> bool:
    """A null operand of a `!=` guard, which must not hold."""
    if isinstance(c, Quantified):
        t = _link_target(state, e, c.list_field)
        return c.op == "!=" and nullable(t.field(c.field) if t else None)
    return isinstance(c, Compare) and c.op == "!=" and _null_operand(e, c)


def _null_operand(e: Entity, c: Compare) -> bool:
    if isinstance(c.left, FieldOperand):
        return nullable(e.field(c.left.field))
    if isinstance(c.left, ArithOperand):
        return nullable(e.field(c.left.left)) or nullable(e.field(c.left.right))
    return False


def null_as_zero(state: State, e: Entity, c: Condition) -> bool:
    """An ordering guard a null operand must fail but 0 passes."""
    if isinstance(c, Quantified):
        t = _link_target(state, e, c.list_field)
        return _zero_passes(c) and nullable(t.field(c.field) if t else None)
    if not isinstance(c, Compare) or not isinstance(c.left, FieldOperand | ArithOperand):
        return False
    if isinstance(c.left, FieldOperand):
        return _zero_passes(c) and nullable(e.field(c.left.field))
    # A null operand makes the whole computation null (the README's rule), which the bug then reads as 0.
    return _zero_passes(c) and (nullable(e.field(c.left.left)) or nullable(e.field(c.left.right)))


def falsy_null_check(state: State, e: Entity, c: Condition) -> bool:
    """A null check on a field that can hold false, 0 or ""."""
    if not isinstance(c, NullCheck):
        return False
    f = e.field(c.field)
    return f is not None and any(scalar_fits(state, f, v) for v in FALSY.get(f.kind, ()))


def quantifier(kind: str) -> object:
    return lambda state, e, c: isinstance(c, Quantified) and c.quantifier == kind


def sum_of_empty_passes(state: State, e: Entity, c: Condition) -> bool:
    return isinstance(c, Compare) and isinstance(c.left, SumOperand) and _cmp(0, c.op, c.value)


def later_guard_can_fail(state: State) -> bool:
    return any(
        i >= 1 and can_be(state, e, c, False) and others_hold(state, e, a, i)
        for a, e in actions(state)
        for i, c in enumerate(a.conditions)
    )


def some_guard_can_fail(state: State) -> bool:
    return any(can_be(state, e, c, False) for a, e in actions(state) for c in a.conditions)


def action_can_succeed(state: State) -> bool:
    return any(others_hold(state, e, a) for a, e in actions(state))


# --- effects -----------------------------------------------------------------------------------------


def _writes(x: Effect) -> tuple[str, str] | None:
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
            t = _link_target(state, e, link)
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
        if j == i or (j < i and not before) or _writes(y) != _writes(x):
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
    t = _link_target(state, e, x.list_field)
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
            ok = _cmp(assign[c.left.field], c.op, c.value)
        elif isinstance(c, Compare) and isinstance(c.left, ArithOperand):
            ok = _cmp(_ARITH[c.left.op](assign[c.left.left], assign[c.left.right]), c.op, c.value)
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
            r = _ARITH[x.op](preset.get(fa.name, va), preset.get(fb.name, vb))
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
        v != inner.value and all(_cmp(v, c.op, c.value) for c in alls)
        for lit in [None, *lits]
        for v in values(state, g, lit)
    )


def _listed_nonempty(state: State, e: Entity, a: Action, link: str) -> bool:
    """The guards on list `link` can hold with at least one entity in it."""
    t = _link_target(state, e, link)
    for c in a.conditions:
        if link not in condition_fields(c):
            continue
        if isinstance(c, Quantified):
            g = t.field(c.field) if t else None
            if g is None or not any(_cmp(v, c.op, c.value) for v in values(state, g, c.value)):
                return False
        elif isinstance(c, Compare) and isinstance(c.left, CountOperand):
            if not any(_cmp(k, c.op, c.value) for k in range(1, 5)):
                return False
        elif isinstance(c, Compare) and isinstance(c.left, SumOperand):
            g = t.field(c.left.field) if t else None
            vs = [v for v in values(state, g, c.value) if isinstance(v, int | float)] if g else []
            if not any(_cmp(x, c.op, c.value) for x in {*vs, *(p + q for p in vs for q in vs)}):
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
            t = _link_target(state, e, link)
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
            t = _link_target(state, e, link)
            g = t.field(c.field) if t else None
            if g is None or not any(_cmp(v, c.op, c.value) for v in values(state, g, c.value)):
                return False
        elif (
            isinstance(c, Compare)
            and isinstance(c.left, CountOperand)
            and not any(_cmp(k, c.op, c.value) for k in range(2, 5))
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
    t = _link_target(state, e, x.list_field)
    return t is not None and _shows_on(state, t, x.effect, a, x.list_field)


def _reads(x: Effect) -> set[tuple[str, str] | None]:
    """What an effect reads besides the field it writes: a computation's operands."""
    return {("", x.left), ("", x.right)} if isinstance(x, Compute) else set()


def _shift(x: Effect) -> str | None:
    """The own field `x` shifts by an amount or by another field (`f + 2`, `f + g`, `f - g`), if it does."""
    if isinstance(x, Increment):
        return x.field
    if isinstance(x, Compute) and (
        (x.op == "+" and (x.left == x.field) != (x.right == x.field))
        or (x.op == "-" and x.left == x.field and x.right != x.field)
    ):
        return x.field
    return None


def _shifts(x: Effect, y: Effect) -> bool:
    """Two shifts of one field commute (what else they read is another pair's conflict)."""
    return _shift(x) is not None and _shift(x) == _shift(y)


def _zero_stays(x: Effect, y: Effect) -> bool:
    """`y` is `f = f - f` (0) and `x` maps f = 0 to 0 (`f + f`, `f * g`, `f - f`): either order ends at 0."""
    if not (
        isinstance(x, Compute)
        and isinstance(y, Compute)
        and x.field == y.field
        and y.op == "-"
        and y.left == y.right == y.field
    ):
        return False
    f = x.field
    return (x.left == x.right == f and x.op in "+-*") or (x.op == "*" and f in (x.left, x.right))


def _conflict(x: Effect, y: Effect) -> bool:
    """Applying x then y can end differently from y then x (two increments of one field commute)."""
    if _shifts(x, y) or _zero_stays(x, y) or _zero_stays(y, x):
        return False
    wx, wy = _writes(x), _writes(y)
    inner_x = x.effect if isinstance(x, OnReference | ForEach) else x
    inner_y = y.effect if isinstance(y, OnReference | ForEach) else y
    if wx == wy and not (isinstance(inner_x, Increment) and isinstance(inner_y, Increment)):
        return True
    return wx in _reads(y) or wy in _reads(x)


def _pinned_null(action: Action, name: str) -> bool:
    return any(isinstance(c, NullCheck) and c.is_null and c.field == name for c in action.conditions)


def _noop(action: Action, x: Effect, dead: list[Effect]) -> bool:
    """An effect that can never change anything: its input or reference is pinned null by an `is null` guard
    and no live effect writes it (the `dead` ones are no-ops themselves), so in either order it reads null."""
    live = [y for y in action.effects if y is not x and not any(y is d for d in dead)]  # x reads before it writes
    if isinstance(x, Increment):
        return _pinned_null(action, x.field) and not any(
            _writes(y) == ("", x.field) and not isinstance(y, Increment) for y in live
        )
    if isinstance(x, Compute):
        return any(_pinned_null(action, o) and not any(_writes(y) == ("", o) for y in live) for o in (x.left, x.right))
    return isinstance(x, OnReference) and _pinned_null(action, x.ref_field)


def _noops(action: Action) -> list[Effect]:
    """The effects that can never change anything, to a fixed point: two computations reading the same pinned
    null field write only each other's inputs, and neither ever writes."""
    dead: list[Effect] = []
    grew = True
    while grew:
        grew = False
        for x in action.effects:
            if not any(x is d for d in dead) and _noop(action, x, dead):
                dead.append(x)
                grew = True
    return dead


def order_matters(state: State) -> bool:
    def live(a: Action) -> list[Effect]:
        dead = _noops(a)
        return [x for x in a.effects if not any(x is d for d in dead)]

    return any(
        others_hold(state, e, a) and any(_conflict(x, y) for i, x in enumerate(live(a)) for y in live(a)[i + 1 :])
        for a, e in actions(state)
    )


# --- analytics ---------------------------------------------------------------------------------------


def null_counts_as_zero(state: State) -> bool:
    """An avg, min or max over a field that can be null: entities that all hold null give null, not 0."""
    for an in state.analytics:
        e = state.entity(an.entity)
        f = e.field(an.field or "") if e else None
        if f is not None and nullable(f) and an.op in ("avg", "min", "max"):
            return True
    return False


def integer_aggregate(state: State, ops: set[str]) -> bool:
    for an in state.analytics:
        e = state.entity(an.entity)
        f = e.field(an.field or "") if e else None
        if an.op in ops and f is not None and f.kind == "integer" and (an.op != "avg" or len(set(_ends(f))) > 1):
            return True
    return False
