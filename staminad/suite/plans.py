"""Data plans for tests that need related entities: reference fixtures and guard-shaped entities.

A plan is the list of entities to create (targets first) plus the body of the entity under test.
For actions, `plan_for_guards` builds an entity on which each guard holds or fails as asked; the
caller checks the result with the semantics module, so a plan that misses is never used.
"""

from __future__ import annotations

import random
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


def fixture_steps(rng: random.Random, state: State, entity: Entity, body: dict[str, Any],
                  only: str | None = None) -> tuple[list[Step], dict[str, Any]]:
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


def _candidates(rng: random.Random, state: State, f: Field, around: Any = None) -> list[Any]:
    """Valid values for a field, biased towards `around` (a literal in a guard) and the bounds."""
    out: list[Any] = []
    if f.kind in NUMERIC_KINDS:
        pts: list[int | float] = [0, 1, 2, 5, 10, 100]
        if isinstance(around, int | float) and not isinstance(around, bool):
            pts += [around, around - 1, around + 1, around - 0.5, around + 0.5, around * 2, around / 2]
        pts += [b for b in (f.minimum, f.maximum) if b is not None]
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

    def link(self, rng: random.Random, state: State, f: Field, values: list[dict[str, Any]]) -> None:
        """Create one target per `values` entry (field overrides) and reference them from `f`."""
        target = state.entity(f.target or "")
        assert target is not None
        ids = []
        for overrides in values:
            tb = {**target_body(rng, state, target), **overrides}
            for k, v in overrides.items():
                if v is _OMIT:
                    del tb[k]
            self.related.append((target, tb))
            ids.append(tb["id"])
        self.body[f.name] = ids if f.kind == "ref_list" else (ids[0] if ids else None)


_OMIT = object()


def _null_value(f: Field) -> Any:
    """How to make a field read as null: send null if nullable, else leave it out."""
    return None if f.nullable else _OMIT


def shape(rng: random.Random, state: State, entity: Entity, plan: Plan, cond: Condition, want: bool) -> bool:
    """Adjust `plan` so `cond` should evaluate to `want`; False when no candidate fits."""
    if isinstance(cond, NullCheck):
        f = entity.field(cond.field)
        assert f is not None
        if cond.is_null == want:
            if f.required and not f.nullable:
                return False
            value = _null_value(f)
            if value is _OMIT:
                plan.body.pop(f.name, None)
            else:
                plan.body[f.name] = None
            return True
        if f.kind == "ref":
            plan.link(rng, state, f, [{}])
        else:
            plan.body[f.name] = scalar_value(rng, state, f)
        return True
    if isinstance(cond, Quantified):
        f = entity.field(cond.list_field)
        target = state.entity(f.target or "") if f else None
        tf = target.field(cond.field) if target else None
        assert f is not None and tf is not None
        cands = _candidates(rng, state, tf, cond.value)
        good = [v for v in cands if compare(v, cond.op, cond.value)]
        bad = [v for v in cands if not compare(v, cond.op, cond.value)]
        values: list[Any] | None
        if cond.quantifier == "all":
            if want:
                values = [rng.choice(good), rng.choice(good)] if good else []  # an empty list satisfies "all"
            else:
                values = [rng.choice(cands), rng.choice(bad)] if bad else None
        elif want:
            values = [rng.choice(cands), rng.choice(good)] if good else None
        else:
            values = [rng.choice(bad), rng.choice(bad)] if bad else []  # an empty list fails "any"
        if values is None:
            return False
        plan.link(rng, state, f, [{tf.name: v} for v in values])
        return True
    assert isinstance(cond, Compare)
    left = cond.left
    if isinstance(left, FieldOperand):
        f = entity.field(left.field)
        assert f is not None
        options = [v for v in _candidates(rng, state, f, cond.value) if compare(v, cond.op, cond.value) == want]
        if not options:
            return False
        plan.body[f.name] = rng.choice(options)
        return True
    if isinstance(left, ArithOperand):
        fa, fb = entity.field(left.left), entity.field(left.right)
        assert fa is not None and fb is not None
        ca, cb = _candidates(rng, state, fa, cond.value), _candidates(rng, state, fb, 0)
        pairs = [(a, b) for a in ca for b in cb
                 if compare(ARITH[left.op](a, b), cond.op, cond.value) == want and (fa is not fb or a == b)]
        if not pairs:
            return False
        plan.body[fa.name], plan.body[fb.name] = rng.choice(pairs)
        return True
    f = entity.field(left.list_field)
    assert f is not None
    if isinstance(left, CountOperand):
        ks = [k for k in range(0, 5) if compare(k, cond.op, cond.value) == want]
        if not ks:
            return False
        plan.link(rng, state, f, [{} for _ in range(rng.choice(ks))])
        return True
    assert isinstance(left, SumOperand)
    target = state.entity(f.target or "")
    tf = target.field(left.field) if target else None
    assert tf is not None
    cands = _candidates(rng, state, tf, cond.value)
    for _ in range(60):
        k = rng.randint(0, 3)
        values = [rng.choice(cands) for _ in range(k)] if cands else []
        if compare(sum(values), cond.op, cond.value) == want:
            plan.link(rng, state, f, [{tf.name: v} for v in values])
            return True
    return False
