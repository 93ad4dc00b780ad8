"""Tests of one analytics endpoint: over no entities, one entity, several with a null among them, and
entities whose values are all null.

The data is drawn so the README's `analytics` rule shows: the several-entity case holds a null
where the field allows one (it must be skipped, not counted as 0), its values for `min` are
positive and for `max` negative where the bounds allow (so a null read as 0 would win), close to
0 and on both sides of it otherwise, and averages that are not round (so rounding shows). Entities
that exist but hold only nulls give what no entities give (0 for a sum, null otherwise), which a
server that checks for rows rather than for values gets wrong.
"""

from __future__ import annotations

import math
import random
from typing import Any

from staminad.bench.schema import Analytics, Entity, Field, State
from staminad.suite.data import scalar_body, scalar_value
from staminad.suite.draws import ident
from staminad.suite.model import Check, Equals, IsInteger, Step, req
from staminad.suite.plans import can_be_null, set_null

AnalyticsTest = tuple[str, str, str, list[Step], tuple[str, ...]]  # ..., the input classes it covers


def aggregate(op: str, values: list[Any], n: int) -> Any:
    """What the README says `op` gives over `n` entities holding `values` (nulls among them)."""
    if op == "count":
        return n
    present = [v for v in values if v is not None]
    if op == "sum":
        return sum(present)
    if not present:
        return None
    if op == "avg":
        return sum(present) / len(present)
    return min(present) if op == "min" else max(present)


def signed_value(rng: random.Random, f: Field, sign: int) -> int | float | None:
    """A valid value of a numeric field with the given sign (-1, 0 for near 0, 1), or None if none fits."""
    lo = f.minimum if f.minimum is not None else -1000
    hi = f.maximum if f.maximum is not None else 1000
    if sign > 0:
        lo, hi = max(lo, 1 if f.kind == "integer" else 0.01), min(hi, max(lo, 1) + 20)
    elif sign < 0:
        lo, hi = max(lo, min(hi, -1) - 20), min(hi, -1 if f.kind == "integer" else -0.01)
    else:
        lo, hi = max(lo, -10), min(hi, 10)
    if lo > hi:
        return None
    if f.kind == "integer":
        return rng.randint(int(lo), int(hi)) if int(lo) <= int(hi) else None
    return min(max(round(rng.uniform(float(lo), float(hi)), 2), float(lo)), float(hi))


def _values(rng: random.Random, state: State, f: Field, op: str, n: int) -> list[Any]:
    sign = 1 if op == "min" else -1 if op == "max" else 0
    out = []
    for i in range(n):
        v = signed_value(rng, f, sign if op in ("min", "max") else (i % 3) - 1)
        out.append(v if v is not None else scalar_value(rng, state, f))
    return out


def _data(
    rng: random.Random, state: State, e: Entity, f: Field | None, op: str, label: str, n: int
) -> tuple[list[dict[str, Any]], Any]:
    """`n` valid bodies (the last one null in `f` where it can be) and the aggregate they must give."""
    bodies = [scalar_body(rng, state, e, ident(rng, f"{e.endpoint}-{label}{i}")) for i in range(n)]
    if f is None:  # count: entities with null fields count like any other
        for g in e.fields:
            if n > 1 and can_be_null(g) and g.kind not in ("ref", "ref_list"):
                set_null(bodies[-1], g)
        return bodies, aggregate(op, [], n)
    if n > 1:
        for body, v in zip(bodies, _values(rng, state, f, op, n), strict=True):
            body[f.name] = v
    if n > 1 and can_be_null(f):
        set_null(bodies[-1], f)
    values = [b.get(f.name, f.default if f.has_default else None) for b in bodies]
    return bodies, aggregate(op, values, n)


def _empty(a: Analytics) -> int | None:
    """What `a` is over no entities (or only nulls): 0 for count and sum, else null."""
    return 0 if a.op in ("count", "sum") else None


def _empty_test(a: Analytics, name: str) -> AnalyticsTest:
    empty = _empty(a)
    step = req(
        "GET",
        a.path(),
        expect=(200,),
        checks=(Equals(("result",), empty),),
        why=f"{a.op} over no entities must be {empty}",
    )
    return (f"{name}_empty", "wrong_response_format", "analytics", [step], ("empty",))


def _drawn(
    rng: random.Random, state: State, e: Entity, f: Field | None, a: Analytics, label: str, n: int
) -> tuple[list[dict[str, Any]], Any]:
    """`_data` for `n` entities, redrawn (up to 20 times) until an average is not already round: rounding must
    show."""
    for _ in range(20):
        bodies, expected = _data(rng, state, e, f, a.op, label, n)
        # Compared with a tolerance: 850.59 / 3 is 283.53000000000003, round in decimal all the same.
        if a.op != "avg" or n == 1 or expected is None or not math.isclose(round(expected, 2), expected, rel_tol=1e-9):
            break
    return bodies, expected


def _value_tests(
    rng: random.Random, state: State, e: Entity, f: Field | None, a: Analytics, name: str
) -> list[AnalyticsTest]:
    """`a` over one entity and over several (one of them null where the field can be, which must be skipped)."""
    integer = a.op in ("sum", "min", "max") and f is not None and f.kind == "integer"
    nulls = f is not None and can_be_null(f)
    out: list[AnalyticsTest] = []
    # "many" is three values plus, where the field allows it, a null that must be skipped; three
    # integers rarely average to a round number, four always average to quarters.
    for label, n in (("single", 1), ("many", 4 if nulls else 3)):
        bodies, expected = _drawn(rng, state, e, f, a, label, n)
        checks: list[Check] = [Equals(("result",), expected)]
        if (integer or a.op == "count") and expected is not None:
            checks.append(IsInteger(("result",)))
        what = f"{n} entit{'y' if n == 1 else 'ies'}" + (" (one null, skipped)" if n > 1 and nulls else "")
        steps = [
            *(req("POST", f"/{e.endpoint}", b) for b in bodies),
            req("GET", a.path(), expect=(200,), checks=tuple(checks), why=f"{a.op} over {what} must be {expected!r}"),
        ]
        out.append((f"{name}_{label}", "type_error", "analytics", steps, ("null_skipped",) if n > 1 and nulls else ()))
    return out


def _all_null_test(rng: random.Random, state: State, e: Entity, f: Field, a: Analytics, name: str) -> AnalyticsTest:
    bodies = [scalar_body(rng, state, e, ident(rng, f"{e.endpoint}-nulls{i}")) for i in range(2)]
    for body in bodies:
        set_null(body, f)
    empty = _empty(a)
    why = f"{a.op} over entities whose {f.name} is null skips them all: {empty}"
    steps = [
        *(req("POST", f"/{e.endpoint}", b) for b in bodies),
        req("GET", a.path(), expect=(200,), checks=(Equals(("result",), empty),), why=why),
    ]
    return (f"{name}_all_null", "type_error", "analytics", steps, ("all_null",))


def analytics_tests(
    state: State, a: Analytics, rng: random.Random, extra: random.Random | None = None
) -> list[AnalyticsTest]:
    """The tests of `a`; the all-null one draws from `extra` where given (so the others' data stay as they were)."""
    e = state.entity(a.entity)
    assert e is not None
    name = f"analytics_{e.endpoint}_{a.field or 'all'}_{a.op}"
    f = e.field(a.field) if a.field else None
    out = [_empty_test(a, name), *_value_tests(rng, state, e, f, a, name)]
    if f is not None and can_be_null(f):
        out.append(_all_null_test(extra or rng, state, e, f, a, name))
    return out
