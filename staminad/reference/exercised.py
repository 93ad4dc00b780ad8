"""When a state can show a bug of the guards and analytics: the `exercised` predicates of those mutants, and the
readings of the schema they share with `effectcases` (effects) and `effectorder` (their order).

Each predicate says whether some valid data on this state makes the mutant answer differently
from the README's rules, read from the schema alone (not from the suite): a guard that no valid
entity can satisfy, or an effect whose input a guard pins, shows nothing. Guards of one action
read disjoint fields, so each is decided on its own fields; numeric domains are probed at their
ends and around the literal, which decides every comparison the generator writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from staminad.bench.parts import condition_fields
from staminad.bench.schema import (
    NUMERIC_KINDS,
    Action,
    ArithOperand,
    Compare,
    Condition,
    CountOperand,
    Entity,
    Field,
    FieldOperand,
    NullCheck,
    Quantified,
    Scalar,
    State,
    SumOperand,
)
from staminad.bench.values import scalar_fits

ORDER = ("<", "<=", ">", ">=")  # the ordering comparisons
_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
FALSY: dict[str, tuple[Scalar, ...]] = {"boolean": (False,), "integer": (0,), "float": (0.0,), "string": ("",)}
ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def nullable(f: Field | None) -> bool:
    """A client can make the field read as null (send null, or omit it where no default fills it in)."""
    return f is not None and f.kind != "ref_list" and (f.nullable or (not f.required and not f.has_default))


def compare(a: object, op: str, b: object) -> bool:
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


def link_target(state: State, entity: Entity, link: str) -> Entity | None:
    f = entity.field(link)
    return state.entity(f.target or "") if f else None


def can_be(state: State, entity: Entity, c: Condition, want: bool) -> bool:
    """Whether some valid entity (and referenced entities) makes guard `c` evaluate to `want`."""
    if isinstance(c, NullCheck):
        return nullable(entity.field(c.field)) if c.is_null == want else True
    if isinstance(c, Quantified):
        target = link_target(state, entity, c.list_field)
        g = target.field(c.field) if target else None
        if g is None:
            return False
        if c.quantifier == "any":
            return (not want) or any(compare(v, c.op, c.value) == want for v in values(state, g, c.value))
        return want or nullable(g) or any(not compare(v, c.op, c.value) for v in values(state, g, c.value))
    left = c.left
    if isinstance(left, FieldOperand):
        f = entity.field(left.field)
        if f is None:
            return False
        return (not want and nullable(f)) or any(compare(v, c.op, c.value) == want for v in values(state, f, c.value))
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
        return any(compare(ARITH[left.op](a, b), c.op, c.value) == want for a, b in pairs)
    if isinstance(left, CountOperand):
        return any(compare(k, c.op, c.value) == want for k in range(0, 5))
    assert isinstance(left, SumOperand)
    target = link_target(state, entity, left.list_field)
    g = target.field(left.field) if target else None
    if g is None:
        return False
    vs = [v for v in values(state, g, c.value) if isinstance(v, int | float)]
    sums = {0, *vs, *(a + b for a in vs for b in vs)}
    return any(compare(s, c.op, c.value) == want for s in sums)


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


def at_literal(ops: frozenset[str]) -> object:
    """`ok` of `any_guard`: a guard `this.x OP literal`, OP in `ops`, whose literal is a value `x` can hold."""

    def ok(state: State, e: Entity, c: Condition) -> bool:
        f = e.field(c.left.field) if isinstance(c, Compare) and isinstance(c.left, FieldOperand) else None
        return f is not None and isinstance(c, Compare) and c.op in ops and scalar_fits(state, f, c.value)

    return ok


def _zero_passes(c: Compare | Quantified) -> bool:
    return c.op in ORDER and compare(0, c.op, c.value)


def null_ne(state: State, e: Entity, c: Condition) -> bool:
    """A null operand of a `!=` guard, which must not hold."""
    if isinstance(c, Quantified):
        t = link_target(state, e, c.list_field)
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
        t = link_target(state, e, c.list_field)
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
    return isinstance(c, Compare) and isinstance(c.left, SumOperand) and compare(0, c.op, c.value)


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
