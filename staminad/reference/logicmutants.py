"""The catalogue's mutants of business rules (actions, effects, guards, analytics) and of a few field, cascade and
rename rules; `mutants` joins them with the others."""

from __future__ import annotations

from collections.abc import Sequence

from staminad.bench.changes import (
    Change,
    RenameEntity,
)
from staminad.bench.schema import State
from staminad.reference import effectcases as fx
from staminad.reference import exercised as ex
from staminad.reference.effectorder import order_matters
from staminad.reference.mutant import Mutant, added_field_survives, any_field, carried


def _analytics(s: State, ops: set[str]) -> bool:
    return any(a.op in ops for a in s.analytics)


def _wrong_state_possible(s: State) -> bool:
    for a in s.actions:
        e = s.entity(a.entity)
        f = e.field(a.field) if e else None
        en = s.enum(f.enum or "") if f else None
        if en and any(v not in a.sources for v in en.values):
            return True
    return False


def _rename_leaks(s: State, changes: Sequence[Change]) -> bool:
    from staminad.reference.agent import _snake

    for i, c in enumerate(changes):
        at = carried(c.new, None, changes[i + 1 :]) if isinstance(c, RenameEntity) else None
        if (
            isinstance(c, RenameEntity)
            and at
            and any(f.target == at[0] and _snake(c.old) in f.name for e in s.entities for f in e.fields)
        ):
            return True
    return False


def _old_endpoint_answers(s: State, changes: Sequence[Change]) -> bool:
    """A rename this turn whose old endpoint would still answer: the mutant aliases the old path to the new
    name, which must still name an entity at the end of the turn (a later rename or delete kills the alias),
    and no current entity may own that path."""
    names = {e.name for e in s.entities}
    endpoints = {e.endpoint for e in s.entities}
    return any(isinstance(x, RenameEntity) and x.new in names and x.old.lower() not in endpoints for x in changes)


LOGIC_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "accept-null",
        "null",
        "validation",
        "accepts null for non-nullable fields",
        lambda s, c: any_field(s, lambda f: not f.nullable and f.kind != "ref_list"),
    ),
    Mutant(
        "default-required",
        "default",
        "default_value",
        "treats a field with a default as required",
        lambda s, c: any_field(s, lambda f: f.has_default),
    ),
    Mutant(
        "no-cascade",
        "cascade",
        "cascade_deletion",
        "does not update references when their target is deleted",
        lambda s, c: any_field(s, lambda f: f.target is not None),
    ),
    Mutant(
        "rename-leak",
        "rename-entity",
        "rename",
        "an entity rename also renames other entities' fields named after it",
        _rename_leaks,
    ),
    Mutant(
        "old-endpoint-alive",
        "rename-entity",
        "regression",
        "keeps answering on an entity's old endpoint after a rename",
        lambda s, c: _old_endpoint_answers(s, c),
    ),
    Mutant(
        "rounded-avg", "analytics", "type_error", "rounds averages to two decimals", lambda s, c: _analytics(s, {"avg"})
    ),
    Mutant(
        "zero-for-empty",
        "analytics",
        "wrong_response_format",
        "returns 0 instead of null for empty min/max/avg",
        lambda s, c: _analytics(s, {"avg", "min", "max"}),
    ),
    Mutant(
        "wrong-state-422",
        "actions",
        "wrong_response_format",
        "answers 422 instead of 400 for a wrong-state action",
        lambda s, c: _wrong_state_possible(s),
    ),
    Mutant(
        "swap-400-409",
        "actions",
        "wrong_response_format",
        "swaps 400 (wrong state) and 409 (unmet guard)",
        lambda s, c: _wrong_state_possible(s) or any(a.conditions for a in s.actions),
    ),
    Mutant(
        "no-ref-effects",
        "effects",
        "business_logic",
        "skips effects on referenced and listed entities",
        lambda s, c: fx.ref_effect_shows(s),
    ),
    Mutant(
        "ignore-add_field",
        "spec-file",
        "missing_feature",
        "silently ignores every add-field change",
        lambda s, c: added_field_survives(s, c),
    ),
    Mutant(
        "500-on-wrong-type",
        "types",
        "server_crash",
        "crashes (500) on a value of the wrong type",
        lambda s, c: bool(s.entities),
    ),
    Mutant(
        "case-insensitive-enums",
        "enum",
        "enum_handling",
        "matches enum values case-insensitively",
        lambda s, c: any_field(s, lambda f: f.kind == "enum"),
    ),
    Mutant(
        "exclusive-bounds",
        "range",
        "validation",
        "treats numeric bounds as exclusive",
        lambda s, c: any_field(s, lambda f: f.minimum is not None or f.maximum is not None),
    ),
    Mutant(
        "invalid-calendar",
        "datetime",
        "validation",
        "accepts impossible calendar dates such as 2023-02-30",
        lambda s, c: any_field(s, lambda f: f.kind == "datetime"),
    ),
    Mutant(
        "patch-rejects-id",
        "patch-id",
        "validation",
        "rejects a PATCH that repeats the unchanged id",
        lambda s, c: bool(s.entities),
    ),
    # actions, guards, effects, analytics
    Mutant(
        "unknown-id-400",
        "actions",
        "wrong_response_format",
        "checks the state before the entity exists, so an unknown id answers 400",
        lambda s, c: bool(s.actions),
    ),
    Mutant(
        "guards-before-state",
        "actions",
        "wrong_response_format",
        "checks guards before the state, so a wrong-state entity with an unmet guard gets 409",
        lambda s, c: ex.some_guard_can_fail(s),
    ),
    Mutant(
        "stale-action-body",
        "actions",
        "business_logic",
        "answers a successful action with the entity as it was before the action",
        lambda s, c: ex.action_can_succeed(s),
    ),
    Mutant(
        "null-ne-holds",
        "guards",
        "business_logic",
        "lets `this.x != V` hold when x is null",
        lambda s, c: ex.any_guard(s, ex.null_ne),
    ),
    Mutant(
        "null-as-zero-order",
        "guards",
        "business_logic",
        "reads null as 0 in <, <=, >, >= (as JavaScript does)",
        lambda s, c: ex.any_guard(s, ex.null_as_zero),
    ),
    Mutant(
        "null-check-falsy",
        "guards",
        "business_logic",
        'tests `is null` by truthiness, so false, 0 and "" count as null',
        lambda s, c: ex.any_guard(s, ex.falsy_null_check),
    ),
    Mutant(
        "any-empty-holds",
        "guards",
        "business_logic",
        "lets `any of` hold for an empty list",
        lambda s, c: ex.any_guard(s, ex.quantifier("any")),
    ),
    Mutant(
        "all-empty-fails",
        "guards",
        "business_logic",
        "makes `all of` fail for an empty list",
        lambda s, c: ex.any_guard(s, ex.quantifier("all")),
    ),
    Mutant(
        "first-guard-only",
        "guards",
        "business_logic",
        "checks only an action's first guard",
        lambda s, c: ex.later_guard_can_fail(s),
    ),
    Mutant(
        "guard-sum-empty-null",
        "guards",
        "business_logic",
        "makes `sum(this.items.f)` null over no values, as SQL's SUM does",
        lambda s, c: ex.any_guard(s, ex.sum_of_empty_passes),
    ),
    Mutant(
        "increase-null-as-zero",
        "effects",
        "business_logic",
        "increases or decreases a null field as if it were 0",
        lambda s, c: fx.increase_null(s),
    ),
    Mutant(
        "compute-null-writes-null",
        "effects",
        "business_logic",
        "stores null when an operand of `set this.x to this.a * this.b` is null",
        lambda s, c: fx.compute_null(s),
    ),
    Mutant(
        "effects-clamped",
        "effects",
        "business_logic",
        "clamps effect results to the field's bounds",
        lambda s, c: fx.clamped(s),
    ),
    Mutant(
        "on-ref-null-crash",
        "effects",
        "server_crash",
        "crashes (500) when an effect's reference is null",
        lambda s, c: fx.on_ref_null(s),
    ),
    Mutant(
        "for-each-first-only",
        "effects",
        "business_logic",
        "applies a `for each` effect to the first listed entity only",
        lambda s, c: fx.for_each_two(s),
    ),
    Mutant(
        "effects-reversed",
        "effects",
        "business_logic",
        "applies an action's effects in reverse order",
        lambda s, c: order_matters(s),
    ),
    Mutant(
        "null-as-zero",
        "analytics",
        "type_error",
        "counts null values as 0 in sum, avg, min and max",
        lambda s, c: ex.null_counts_as_zero(s),
    ),
    Mutant(
        "int-as-float",
        "analytics",
        "type_error",
        "returns sum, min and max of integer fields as floats",
        lambda s, c: ex.integer_aggregate(s, {"sum", "min", "max"}),
    ),
    Mutant(
        "sum-empty-null",
        "analytics",
        "wrong_response_format",
        "answers null for a sum over no values",
        lambda s, c: _analytics(s, {"sum"}),
    ),
    Mutant(
        "avg-floor",
        "analytics",
        "type_error",
        "averages integer fields with integer division",
        lambda s, c: ex.integer_aggregate(s, {"avg"}),
    ),
)
