"""Mutants of the null and empty inputs of computations, and of a removal: the bugs `computations`' classes catch.

Each is a mistake servers written by hand make: a guard that has nothing to compare lets the action
through, `all of` filtering nulls out first, a `set` skipped on a null field (the null rule of
increases applied to every effect), analytics that check for rows rather than for values, and a removed
field left in the request model. (Null read as 0 in a computation, and a query built for an empty `for each`
list, are not here yet: the suites do not give every computation a null target, nor every `for each` an empty
list when its guards allow one, at the first turn they can, so the gate would rightly refuse them.)
`SPECS` holds their catalogue entries, which `mutants` adds to `MUTANTS`; each predicate says, from the schema
alone, whether some valid data on the state makes the mutant answer differently.
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
    Entity,
    FieldOperand,
    ForEach,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
)
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
                free = ex.null_free(a, x.field) and ex.nullable(e.field(x.field))
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
