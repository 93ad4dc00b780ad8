"""Mutants of the null and empty inputs of computations, and of a removal: the bugs `computations`' classes catch.

Each is a mistake servers written by hand make: a guard that has nothing to compare lets the action
through, `all of` filtering nulls out first, a `set` skipped on a null field (the null rule of
increases applied to every effect), null read as 0 in a computation, a query built for an empty
list, analytics that check for rows rather than for values, and a removed field left in the request
model. `SPECS` holds their catalogue entries, which `mutants` adds to `MUTANTS`; each predicate says,
from the schema alone, whether some valid data on the state makes the mutant answer differently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from staminad.bench.changes import Change, DeleteField, RenameEntity
from staminad.bench.parts import condition_fields
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
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
)
from staminad.reference import effectcases as fx
from staminad.reference import exercised as ex

Spec = tuple[str, str, str, str, Callable[[State, Sequence[Change]], bool]]


def _null_compared(state: State, e: Entity, c: Condition) -> bool:
    """A comparison guard whose operand (a field, or either side of a computed one) can be null."""
    if not isinstance(c, Compare):
        return False
    if isinstance(c.left, FieldOperand):
        return ex.nullable(e.field(c.left.field))
    if isinstance(c.left, ArithOperand):
        return ex.nullable(e.field(c.left.left)) or ex.nullable(e.field(c.left.right))
    return False


def _all_with_null_item(state: State, e: Entity, c: Condition) -> bool:
    if not isinstance(c, Quantified) or c.quantifier != "all":
        return False
    f = e.field(c.list_field)
    t = state.entity(f.target or "") if f else None
    return ex.nullable(t.field(c.field) if t else None)


def _link_free(a: Action, x: OnReference | ForEach) -> bool:
    link = x.ref_field if isinstance(x, OnReference) else x.list_field
    return all(
        link not in condition_fields(c) or (isinstance(x, OnReference) and isinstance(c, NullCheck) and not c.is_null)
        for c in a.conditions
    )


def _set_meets_null(state: State) -> bool:
    """A `set` to a non-null value runs on a field that can be null then: an own field the guards leave free (or
    pin null) that no earlier effect writes, or a field of an entity reached over a link the guards leave free."""
    for a, e in ex.actions(state):
        if not ex.others_hold(state, e, a):
            continue
        for i, x in enumerate(a.effects):
            if isinstance(x, SetValue) and x.value is not None and x.field != a.field:
                free = fx.null_free(a, x.field) and ex.nullable(e.field(x.field))
                earlier = any(isinstance(y, SetValue | Compute) and y.field == x.field for y in a.effects[:i])
                if free and not earlier:
                    return True
            if isinstance(x, OnReference | ForEach) and isinstance(x.effect, SetValue) and x.effect.value is not None:
                link = x.ref_field if isinstance(x, OnReference) else x.list_field
                f = e.field(link)
                t = state.entity(f.target or "") if f else None
                if _link_free(a, x) and ex.nullable(t.field(x.effect.field) if t else None):
                    return True
    return False


def _null_at(a: Action, e: Entity, name: str, i: int) -> bool:
    """The own field `name` can be null when effect `i` runs, the guards holding: a client can make it null and
    no guard pins it to a value, and no earlier effect writes it a value (a literal, or a computation none of
    whose operands can be null); or an earlier `set` writes it null."""
    null = ex.nullable(e.field(name)) and fx.null_free(a, name)
    for y in a.effects[:i]:
        if isinstance(y, SetValue) and y.field == name:
            null = y.value is None
        elif isinstance(y, Compute) and y.field == name and null:
            null = any(o == name or (ex.nullable(e.field(o)) and fx.null_free(a, o)) for o in (y.left, y.right))
    return null


def _null_as_zero_shows(state: State) -> bool:
    """A computation can meet a null operand, its own target included (`this.f = this.f * this.g` with f null),
    where reading it as 0 changes the result and no later effect overwrites it: not `f = f + g` or `f = f - g`
    with only g null, which leave f as it was either way."""
    for a, e in ex.actions(state):
        if not ex.others_hold(state, e, a):
            continue
        for i, x in enumerate(a.effects):
            if not isinstance(x, Compute) or fx._overwritten(a, e, x, False):
                continue
            for o in (x.left, x.right):
                same = o != x.field and x.field in (x.left, x.right) and (x.op == "+" or (x.op == "-" and o == x.right))
                if _null_at(a, e, o, i) and not same:
                    return True
    return False


def _holds_empty(c: Condition, link: str) -> bool:
    """`c`, where it reads the list `link`, holds for an empty list (`all of`; a count or sum 0 satisfies)."""
    if link not in condition_fields(c):
        return True
    if isinstance(c, Quantified):
        return c.quantifier == "all"
    if isinstance(c, NullCheck):
        return not c.is_null  # a list is never null
    return isinstance(c, Compare) and isinstance(c.left, SumOperand | CountOperand) and ex.compare(0, c.op, c.value)


def _for_each_empty(state: State) -> bool:
    """A `for each` can walk an empty list while the guards hold: every guard reading the list holds for none."""
    return any(
        ex.others_hold(state, e, a)
        and any(isinstance(x, ForEach) and all(_holds_empty(c, x.list_field) for c in a.conditions) for x in a.effects)
        for a, e in ex.actions(state)
    )


def _all_null_analytics(state: State) -> bool:
    for an in state.analytics:
        e = state.entity(an.entity)
        if an.op in ("avg", "min", "max") and e is not None and ex.nullable(e.field(an.field or "")):
            return True
    return False


def _deleted_field_gone(s: State, changes: Sequence[Change]) -> bool:
    """A field deleted this turn whose entity, carried through the batch, survives without it."""
    for i, c in enumerate(changes):
        if not isinstance(c, DeleteField):
            continue
        entity: str | None = c.entity
        for later in changes[i + 1 :]:
            if isinstance(later, RenameEntity) and later.old == entity:
                entity = later.new
        e = s.entity(entity or "")
        if e is not None and e.field(c.field) is None:
            return True
    return False


SPECS: tuple[Spec, ...] = (
    (
        "null-guard-skipped",
        "guards",
        "business_logic",
        "lets a comparison guard hold when its value is null (nothing to compare, nothing to forbid)",
        lambda s, c: ex.any_guard(s, _null_compared),
    ),
    (
        "all-skips-null-items",
        "guards",
        "business_logic",
        "filters listed entities whose field is null out of `all of` (WHERE f IS NOT NULL)",
        lambda s, c: ex.any_guard(s, _all_with_null_item),
    ),
    (
        "set-skips-null",
        "effects",
        "business_logic",
        "skips `set ... to ...` on a null field (the null rule of increases applied to every effect)",
        lambda s, c: _set_meets_null(s),
    ),
    (
        "compute-null-as-zero",
        "effects",
        "business_logic",
        "computes `set this.x to this.a * this.b` with a null operand read as 0, as JavaScript does",
        lambda s, c: _null_as_zero_shows(s),
    ),
    (
        "for-each-empty-500",
        "effects",
        "server_crash",
        "builds `WHERE id IN ()` for a `for each` over an empty list: the syntax error answers 500",
        lambda s, c: _for_each_empty(s),
    ),
    (
        "all-null-crash",
        "analytics",
        "server_crash",
        "checks for rows rather than for values: avg, min and max crash when every value is null",
        lambda s, c: _all_null_analytics(s),
    ),
    (
        "count-empty-null",
        "analytics",
        "wrong_response_format",
        "answers null for a count over no entities",
        lambda s, c: any(a.op == "count" for a in s.analytics),
    ),
    (
        "removed-field-validated",
        "delete-field",
        "missing_feature",
        "drops a deleted field from its replies but still validates its key in requests",
        _deleted_field_gone,
    ),
)
