"""Data plans for tests that need related entities: reference fixtures and guard-shaped entities.

A plan is the list of entities to create (targets first) plus the body of the entity under test.
For actions, `plan_for_guards` builds an entity on which each guard holds or fails as asked; the
caller checks the result with the semantics module, so a plan that misses is never used.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import product
from typing import Any

from staminad.bench.schema import (
    NUMERIC_KINDS,
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
from staminad.suite.data import scalar_body, scalar_value
from staminad.suite.model import Step, req
from staminad.suite.semantics import ARITH, compare

Created = list[tuple[Entity, dict[str, Any]]]


def target_body(rng: random.Random, state: State, target: Entity) -> dict[str, Any]:
    return scalar_body(rng, state, target, f"{target.endpoint}-{rng.randrange(10**9):09d}")


def fixture_steps(
    rng: random.Random, state: State, entity: Entity, body: dict[str, Any], only: str | None = None
) -> tuple[list[Step], dict[str, Any]]:
    """Create targets for the entity's reference fields (or just `only`) and point `body` at them."""
    steps: list[Step] = []
    body = dict(body)
    for f in entity.fields:
        if f.kind not in ("ref", "ref_list") or (only is not None and f.name != only):
            continue
        target = state.entity(f.target or "")
        assert target is not None
        ids = []
        for _ in range(2 if f.kind == "ref_list" else 1):
            tb = target_body(rng, state, target)
            steps.append(req("POST", f"/{target.endpoint}", tb, why=f"create a {target.name} to reference"))
            ids.append(tb["id"])
        body[f.name] = ids if f.kind == "ref_list" else ids[0]
    return steps, body


def can_be_null(f: Field) -> bool:
    """Whether a client can make the field read as null: send null, or omit it where nothing fills it in."""
    return f.kind != "ref_list" and (f.nullable or (not f.required and not f.has_default))


def falsy_value(state: State, f: Field) -> Any:
    """A valid non-null value a truthiness test mistakes for null (false, 0, ""), or None if there is none."""
    falsy: dict[str, tuple[Scalar, ...]] = {"boolean": (False,), "integer": (0,), "float": (0.0,), "string": ("",)}
    for v in falsy.get(f.kind, ()):
        if scalar_fits(state, f, v):
            return v
    return None


def extremes(f: Field) -> list[int | float]:
    """The ends of a numeric field's range, far values standing in for a missing bound."""
    lo = f.minimum if f.minimum is not None else min(-1000, (f.maximum or 0) - 1000)
    hi = f.maximum if f.maximum is not None else max(1000, (f.minimum or 0) + 1000)
    return [int(lo), int(hi)] if f.kind == "integer" else [float(lo), float(hi)]


def _candidates(rng: random.Random, state: State, f: Field, around: Any = None) -> list[Any]:
    """Valid values for a field, biased towards `around` (a literal in a guard) and the bounds."""
    out: list[Any] = []
    if f.kind in NUMERIC_KINDS:
        pts: list[int | float] = [0, 1, 2, 5, 10, 100, -1, -5, *extremes(f)]
        if isinstance(around, int | float) and not isinstance(around, bool):
            pts += [around, around - 1, around + 1, around - 0.5, around + 0.5, around * 2, around / 2]
        for p in pts:
            v = int(p) if f.kind == "integer" else round(float(p), 2)
            if f.kind == "integer" and v != p:
                continue
            out.append(v)
        out += [scalar_value(rng, state, f) for _ in range(4)]
    elif f.kind == "boolean":
        out = [True, False]
    elif f.kind == "enum":
        en = state.enum(f.enum or "")
        out = list(en.values) if en else []
    elif f.kind == "string":
        out = [around] if isinstance(around, str) else []
        out += [scalar_value(rng, state, f) for _ in range(3)]
    else:
        out = [scalar_value(rng, state, f)]
    return [v for v in dict.fromkeys(out) if scalar_fits(state, f, v)]


class Plan:
    """Entities to create for one action test: `related` first, then `body` (the acted-on entity)."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.related: Created = []
        self.classes: set[str] = set()  # the input classes of computations its data reaches (`computations`)

    def link(self, rng: random.Random, state: State, f: Field, values: list[dict[str, Any]]) -> None:
        """Create one target per `values` entry (field overrides; NULL for null) and reference them from `f`."""
        target = state.entity(f.target or "")
        assert target is not None
        ids = []
        for overrides in values:
            tb = {**target_body(rng, state, target), **overrides}
            for k, v in overrides.items():
                if v is NULL:
                    tf = target.field(k)
                    assert tf is not None
                    set_null(tb, tf)
            self.related.append((target, tb))
            ids.append(tb["id"])
        self.body[f.name] = ids if f.kind == "ref_list" else (ids[0] if ids else None)


NULL: Any = object()  # a `Plan.link` override: make the target's field read as null


def set_null(body: dict[str, Any], f: Field) -> None:
    """Make `f` read as null in a POST body: send null if nullable, else leave it out."""
    if f.nullable:
        body[f.name] = None
    else:
        body.pop(f.name, None)


def _compare_values(cands: list[Any], op: str, value: Any, want: bool) -> list[Any]:
    return [v for v in cands if compare(v, op, value) == want]


def shape(
    rng: random.Random, state: State, entity: Entity, plan: Plan, cond: Condition, want: bool, variant: str = "value"
) -> bool:
    """Adjust `plan` so `cond` should evaluate to `want`; False when no candidate fits.

    `variant` picks how: "value" with ordinary values (a null only where no value can fail the
    guard), "null" with a null operand or a referenced entity whose field is null (the guard then
    fails, although null read as 0 or a plain `!=` would pass it), "empty" with an empty list,
    "falsy" with false, 0 or "" in a null check's field (not null, whatever a truthiness test says).
    One shaper per kind of condition, and per left operand of a comparison (SHAPERS).
    """
    if isinstance(cond, NullCheck):
        return _shape_null_check(rng, state, entity, plan, cond, want, variant)
    if isinstance(cond, Quantified):
        return _shape_quantified(rng, state, entity, plan, cond, want, variant)
    assert isinstance(cond, Compare)
    return SHAPERS[type(cond.left)](rng, state, entity, plan, cond, want, variant)


def _shape_null_check(
    rng: random.Random, state: State, entity: Entity, plan: Plan, cond: NullCheck, want: bool, variant: str
) -> bool:
    f = entity.field(cond.field)
    assert f is not None
    if variant == "falsy":  # false, 0 or "": not null, although a truthiness test reads it so
        falsy = falsy_value(state, f) if f.kind != "ref" else None
        if falsy is None or want == cond.is_null:
            return False
        plan.body[f.name] = falsy
        return True
    if variant != "value":
        return False
    if cond.is_null == want:
        if not can_be_null(f):
            return False
        if f.kind == "ref":
            plan.body.pop(f.name, None)
        else:
            set_null(plan.body, f)
        return True
    if f.kind == "ref":
        plan.link(rng, state, f, [{}])
    else:  # false, 0 or "" where the field allows one: a truthiness test must not pass for null
        falsy = falsy_value(state, f)
        plan.body[f.name] = falsy if falsy is not None else scalar_value(rng, state, f)
    return True


def _shape_field(
    rng: random.Random, state: State, entity: Entity, plan: Plan, cond: Compare, want: bool, variant: str
) -> bool:
    assert isinstance(cond.left, FieldOperand)
    f = entity.field(cond.left.field)
    assert f is not None
    if variant == "null":
        return _null_fails(plan, f, want)
    if variant == "literal":  # exactly the literal: `>=` and `<=` hold there, `>` and `<` do not
        if not scalar_fits(state, f, cond.value) or compare(cond.value, cond.op, cond.value) != want:
            return False
        plan.body[f.name] = cond.value
        return True
    if variant != "value":
        return False
    options = _compare_values(_candidates(rng, state, f, cond.value), cond.op, cond.value, want)
    if not options:
        return _null_fails(plan, f, want)
    plan.body[f.name] = rng.choice(options)
    return True


def _null_fails(plan: Plan, f: Field, want: bool) -> bool:
    """Make `f` null so a comparison on it fails (a null never compares); False when it must hold or cannot be
    null."""
    if want or not can_be_null(f):
        return False
    set_null(plan.body, f)
    return True


def _empty_list(rng: random.Random, state: State, plan: Plan, f: Field, cond: Compare, want: bool) -> bool:
    """An empty list where it gives `want` (its count and its sum are 0)."""
    if compare(0, cond.op, cond.value) != want:
        return False
    plan.link(rng, state, f, [])
    return True


def _shape_count(
    rng: random.Random, state: State, entity: Entity, plan: Plan, cond: Compare, want: bool, variant: str
) -> bool:
    assert isinstance(cond.left, CountOperand)
    f = entity.field(cond.left.list_field)
    assert f is not None
    if variant == "empty":  # the count of an empty list is 0
        return _empty_list(rng, state, plan, f, cond, want)
    if variant != "value":
        return False
    ks = [k for k in range(0, 5) if compare(k, cond.op, cond.value) == want]
    if not ks:
        return False
    # Two or more where allowed, so `for each` must reach them all; else one, so it reaches something.
    many = [k for k in ks if k >= 2] or [k for k in ks if k >= 1] or ks
    plan.link(rng, state, f, [{} for _ in range(rng.choice(many))])
    return True


def _shape_sum(
    rng: random.Random, state: State, entity: Entity, plan: Plan, cond: Compare, want: bool, variant: str
) -> bool:
    left = cond.left
    assert isinstance(left, SumOperand)
    f = entity.field(left.list_field)
    assert f is not None
    if variant == "empty":  # sum over no entities is 0
        return _empty_list(rng, state, plan, f, cond, want)
    if variant != "value":
        return False
    target = state.entity(f.target or "")
    tf = target.field(left.field) if target else None
    assert tf is not None
    cands = _candidates(rng, state, tf, cond.value)
    for k in (2, 3, 1, 0):  # two or more where some sum fits, so `for each` must reach them all
        fits = [list(c) for c in product(cands, repeat=k) if compare(sum(c), cond.op, cond.value) == want]
        if fits:
            values: list[Any] = rng.choice(fits)
            if want and can_be_null(tf):
                values.insert(0, NULL)  # nulls are skipped, never counted as anything
            plan.link(rng, state, f, [{tf.name: v} for v in values])
            return True
    return False


def _shape_arith_compare(
    rng: random.Random, state: State, entity: Entity, plan: Plan, cond: Compare, want: bool, variant: str
) -> bool:
    assert isinstance(cond.left, ArithOperand)
    return _shape_arith(rng, state, entity, plan, cond, cond.left, want, variant)


def _shape_quantified(
    rng: random.Random, state: State, entity: Entity, plan: Plan, cond: Quantified, want: bool, variant: str
) -> bool:
    f = entity.field(cond.list_field)
    target = state.entity(f.target or "") if f else None
    tf = target.field(cond.field) if target else None
    assert f is not None and tf is not None
    cands = _candidates(rng, state, tf, cond.value)
    good = _compare_values(cands, cond.op, cond.value, True)
    bad = _compare_values(cands, cond.op, cond.value, False)
    values: list[Any] | None = None
    if variant == "empty":  # "all" holds for an empty list, "any" fails
        values = [] if want == (cond.quantifier == "all") else None
    elif variant == "null":  # a referenced entity whose field is null satisfies nothing
        if not want and can_be_null(tf):
            values = [NULL] if cond.quantifier == "any" or not good else [rng.choice(good), NULL]
    elif cond.quantifier == "all":
        if want:
            values = [rng.choice(good), rng.choice(good)] if good else []
        elif bad:  # the failing entity comes second: every entity must be checked
            values = [rng.choice(good), rng.choice(bad)] if good else [rng.choice(bad), rng.choice(bad)]
        elif can_be_null(tf):
            values = [NULL]
    elif want:  # the satisfying entity comes second
        values = [rng.choice(bad) if bad else rng.choice(good), rng.choice(good)] if good else None
    else:
        values = [rng.choice(bad), rng.choice(bad)] if bad else [NULL] if can_be_null(tf) else []
    if values is None:
        return False
    plan.link(rng, state, f, [{tf.name: v} for v in values])
    return True


def _shape_arith(
    rng: random.Random,
    state: State,
    entity: Entity,
    plan: Plan,
    cond: Compare,
    left: ArithOperand,
    want: bool,
    variant: str,
) -> bool:
    fa, fb = entity.field(left.left), entity.field(left.right)
    assert fa is not None and fb is not None
    ca, cb = _candidates(rng, state, fa, cond.value), _candidates(rng, state, fb, 0)
    if variant == "null":
        if want:
            return False
        # One operand null; the other where null read as 0 would make the guard hold, if some choice can.
        if fa is fb and can_be_null(fa):
            set_null(plan.body, fa)
            return True
        options: list[tuple[Field, Field, list[Any], bool]] = []
        for nulled, other, cands in ((fa, fb, cb), (fb, fa, ca)):
            if fa is fb or not can_be_null(nulled):
                continue
            zero = [
                v for v in cands if compare(ARITH[left.op](*((0, v) if nulled is fa else (v, 0))), cond.op, cond.value)
            ]
            options.append((nulled, other, zero or cands, bool(zero)))
        if not options:
            return False
        nulled, other, cands, _ = max(options, key=lambda o: o[3])  # the first that shows null-as-0, if any
        plan.body[other.name] = rng.choice(cands)
        set_null(plan.body, nulled)
        return True
    if variant != "value":
        return False
    pairs = [
        (a, b)
        for a in ca
        for b in cb
        if compare(ARITH[left.op](a, b), cond.op, cond.value) == want and (fa is not fb or a == b)
    ]
    if not pairs:
        if want or not (can_be_null(fa) or can_be_null(fb)):
            return False
        set_null(plan.body, fa if can_be_null(fa) else fb)
        return True
    plan.body[fa.name], plan.body[fb.name] = rng.choice(pairs)
    return True


# A comparison's left operand -> how a plan is shaped for it.
SHAPERS: dict[type, Callable[[random.Random, State, Entity, Plan, Compare, bool, str], bool]] = {
    FieldOperand: _shape_field,
    ArithOperand: _shape_arith_compare,
    CountOperand: _shape_count,
    SumOperand: _shape_sum,
}
