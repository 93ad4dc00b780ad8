"""The catalogue of mutants: the reference agent with one seeded bug, and what must catch it.

Each entry names the failure category the suite must report for it and a predicate saying
whether a turn can exercise the bug at all (a design without datetime fields cannot reveal a
calendar bug), so `validate` never counts an untestable bug as missed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from staminad.bench.changes import (
    AddField,
    Change,
    DeleteAnalytics,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RenameEntity,
    RenameField,
    transition,
)
from staminad.bench.removed import removed_items, shadowed, stale_guard_refuses
from staminad.bench.schema import Analytics, Field, State, endpoint_of
from staminad.reference import exercised as ex
from staminad.reference.nullmutants import SPECS


@dataclass(frozen=True)
class Mutant:
    bug: str
    rule: str  # the README rule id (`bench.readme.RULES`) the bug breaks, and only that rule
    category: str
    description: str
    exercised: Callable[[State, Sequence[Change]], bool]
    # For bugs a removal reveals: also exercised at a turn where this holds of (before, after, changes).
    removal: Callable[[State, State, Sequence[Change]], bool] | None = None


def _fields(s: State, pred: Callable[..., bool]) -> bool:
    return any(pred(f) for e in s.entities for f in e.fields)


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
        at = _carry(c.new, None, changes[i + 1 :]) if isinstance(c, RenameEntity) else None
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


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "accept-null",
        "null",
        "validation",
        "accepts null for non-nullable fields",
        lambda s, c: _fields(s, lambda f: not f.nullable and f.kind != "ref_list"),
    ),
    Mutant(
        "default-required",
        "default",
        "default_value",
        "treats a field with a default as required",
        lambda s, c: _fields(s, lambda f: f.has_default),
    ),
    Mutant(
        "no-cascade",
        "cascade",
        "cascade_deletion",
        "does not update references when their target is deleted",
        lambda s, c: _fields(s, lambda f: f.target is not None),
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
        lambda s, c: ex.ref_effect_shows(s),
    ),
    Mutant(
        "ignore-add_field",
        "spec-file",
        "missing_feature",
        "silently ignores every add-field change",
        lambda s, c: _added_field_survives(s, c),
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
        lambda s, c: _fields(s, lambda f: f.kind == "enum"),
    ),
    Mutant(
        "exclusive-bounds",
        "range",
        "validation",
        "treats numeric bounds as exclusive",
        lambda s, c: _fields(s, lambda f: f.minimum is not None or f.maximum is not None),
    ),
    Mutant(
        "invalid-calendar",
        "datetime",
        "validation",
        "accepts impossible calendar dates such as 2023-02-30",
        lambda s, c: _fields(s, lambda f: f.kind == "datetime"),
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
        lambda s, c: ex.increase_null(s),
    ),
    Mutant(
        "compute-null-writes-null",
        "effects",
        "business_logic",
        "stores null when an operand of `set this.x to this.a * this.b` is null",
        lambda s, c: ex.compute_null(s),
    ),
    Mutant(
        "effects-clamped",
        "effects",
        "business_logic",
        "clamps effect results to the field's bounds",
        lambda s, c: ex.clamped(s),
    ),
    Mutant(
        "on-ref-null-crash",
        "effects",
        "server_crash",
        "crashes (500) when an effect's reference is null",
        lambda s, c: ex.on_ref_null(s),
    ),
    Mutant(
        "for-each-first-only",
        "effects",
        "business_logic",
        "applies a `for each` effect to the first listed entity only",
        lambda s, c: ex.for_each_two(s),
    ),
    Mutant(
        "effects-reversed",
        "effects",
        "business_logic",
        "applies an action's effects in reverse order",
        lambda s, c: ex.order_matters(s),
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
MUTANT_BY_BUG = {m.bug: m for m in MUTANTS}


# crud, validation, types, removals


def _any_entity(s: State, c: Sequence[Change]) -> bool:
    return bool(s.entities)


def _nullable_out(f: Field) -> bool:
    """The field can read back as null: nullable, or optional without a default."""
    return f.kind != "ref_list" and (f.nullable or not (f.required or f.has_default))


def _two_values(s: State, f: Field) -> bool:
    """The field accepts at least two different non-null values (a PATCH can change it)."""
    if f.kind in ("integer", "float"):
        return f.minimum is None or f.maximum is None or f.minimum < f.maximum
    if f.kind == "enum":
        en = s.enum(f.enum or "")
        return en is not None and len(en.values) > 1
    if f.kind == "datetime":
        return f.after is None or f.before is None or f.after < f.before
    return f.kind in ("string", "boolean")


def _atomicity(s: State, c: Sequence[Change]) -> bool:
    return any(
        len(e.fields) > 1 and any(_two_values(s, f) for f in e.fields if f.kind not in ("ref", "ref_list"))
        for e in s.entities
    )


def _dt_window(f: Field) -> tuple[str, str]:
    return f.after or "0000-01-01 00:00:00", f.before or "9999-12-31 23:59:59"


def _late_probe(f: Field) -> bool:
    """Some day inside the bounds is followed by more of the window: `D 24:00:00` or `DThh:mm:ss` fits."""
    lo, hi = _dt_window(f)
    return f.kind == "datetime" and lo[:10] < hi[:10]


def _leap_probe(f: Field) -> bool:
    """The bounds hold Feb 29 of some non-leap year (compared as strings)."""
    if f.kind != "datetime":
        return False
    lo, hi = _dt_window(f)
    years = range(max(int(lo[:4]), 1), min(int(hi[:4]), 9999) + 1)
    return any(lo <= f"{y:04d}-02-29 12:00:00" <= hi for y in years if y % 4 or (y % 100 == 0 and y % 400))


def _carry(entity: str, field: str | None, later: Sequence[Change]) -> tuple[str, str | None] | None:
    """An (entity, field) name after the rest of a batch: renamed along, None once deleted."""
    for c in later:
        match c:
            case RenameEntity(old=old, new=new) if old == entity:
                entity = new
            case RenameField(entity=e, old=old, new=new) if e == entity and old == field:
                field = new
            case DeleteEntity(name=name) if name == entity:
                return None
            case DeleteField(entity=e, field=f) if e == entity and f == field:
                return None
    return entity, field


def _steps(before: State, changes: Sequence[Change]) -> list[tuple[int, Change, State, State]]:
    out, cur = [], before
    for i, c in enumerate(changes):
        nxt = transition(cur, [c])
        out.append((i, c, cur, nxt))
        cur = nxt
    return out


def _explicit_gone(s: State, changes: Sequence[Change], kind: type) -> bool:
    """A removal request of `kind` whose object, carried through the batch, is still absent at the end."""
    for i, c in enumerate(changes):
        if isinstance(c, DeleteAnalytics):
            if kind is not DeleteAnalytics:
                continue
            at = _carry(c.analytics.entity, c.analytics.field, changes[i + 1 :])
            if at and s.entity(at[0]) and Analytics(entity=at[0], op=c.analytics.op, field=at[1]) not in s.analytics:
                return True
        elif isinstance(c, RemoveAction) and kind is RemoveAction:
            at = _carry(c.entity, None, changes[i + 1 :])
            if at and s.entity(at[0]) and s.action(at[0], c.name) is None:
                return True
        elif isinstance(c, DeleteField | RenameField) and kind is type(c):
            old = c.field if isinstance(c, DeleteField) else c.old
            at = _carry(c.entity, None, changes[i + 1 :])
            e = s.entity(at[0]) if at else None
            if e is not None and e.field(old) is None:
                return True
    return False


def _implied_paths(before: State, after: State, changes: Sequence[Change]) -> bool:
    """A field deletion took analytics or actions of a surviving entity with it."""
    for i, c, cur, nxt in _steps(before, changes):
        if not isinstance(c, DeleteField):
            continue
        gone_a = [a for a in cur.analytics if a not in nxt.analytics]
        gone_x = [(a.entity, a.name) for a in cur.actions if nxt.action(a.entity, a.name) is None]
        for a in gone_a:
            at = _carry(a.entity, None, changes[i + 1 :])
            if at and after.entity(at[0]) and Analytics(entity=at[0], op=a.op, field=a.field) not in after.analytics:
                return True
        for entity, name in gone_x:
            at = _carry(entity, None, changes[i + 1 :])
            if at and after.entity(at[0]) and after.action(at[0], name) is None:
                return True
    return False


def _dropped_refs(before: State, after: State, changes: Sequence[Change]) -> bool:
    """Deleting an entity removed reference fields of another entity that survives the batch."""
    for i, c, cur, _ in _steps(before, changes):
        if not isinstance(c, DeleteEntity):
            continue
        for e in cur.entities:
            for f in e.fields:
                if e.name != c.name and f.target == c.name:
                    at = _carry(e.name, None, changes[i + 1 :])
                    owner = after.entity(at[0]) if at else None
                    if owner is not None and owner.field(f.name) is None:
                        return True
    return False


def _renamed_paths(before: State, after: State, changes: Sequence[Change]) -> bool:
    """A field rename moved an analytics path of an entity that survives the batch."""
    for i, c, cur, _ in _steps(before, changes):
        if not isinstance(c, RenameField):
            continue
        for a in cur.analytics:
            if a.entity == c.entity and a.field == c.old:
                at = _carry(a.entity, None, changes[i + 1 :])
                if at and after.entity(at[0]) and Analytics(entity=at[0], op=a.op, field=c.old) not in after.analytics:
                    return True
    return False


def _added_field_survives(s: State, changes: Sequence[Change]) -> bool:
    """A field added this turn is still there at the end of the batch (under its name then)."""
    for i, c in enumerate(changes):
        at = _carry(c.entity, c.field.name, changes[i + 1 :]) if isinstance(c, AddField) else None
        e = s.entity(at[0]) if at else None
        if at and e is not None and at[1] is not None and e.field(at[1]) is not None:
            return True
    return False


def _f(kind: str | tuple[str, ...], extra: Callable[[Field], bool] = lambda f: True) -> Callable[..., bool]:
    kinds = (kind,) if isinstance(kind, str) else kind
    return lambda s, c: _fields(s, lambda f: f.kind in kinds and extra(f))


def _effect_shows(before: State, after: State, changes: Sequence[Change]) -> bool:
    """An effect removed this turn that some data would show, run where it was among the remaining effects."""
    for entity, action, effect, index in removed_items(before, changes, after)[1]:
        a = after.action(entity, action)
        if a is not None and not shadowed(a.effects, effect, index):
            return True
    return False


_NO = lambda s, c: False  # noqa: E731 (exercised only through `removal`)

MUTANTS += (
    Mutant(
        "drop-null-keys",
        "json",
        "default_value",
        "leaves null fields out of responses",
        lambda s, c: _fields(s, _nullable_out),
    ),
    Mutant(
        "snake-endpoints",
        "crud",
        "missing_feature",
        "serves `CoffeeBatch` at /coffee_batch",
        lambda s, c: any(any(ch.isupper() for ch in e.name[1:]) for e in s.entities),
    ),
    Mutant(
        "create-echoes-body",
        "create",
        "default_value",
        "answers POST with the request body, not the stored entity",
        lambda s, c: _fields(s, lambda f: f.has_default or not f.required),
    ),
    Mutant(
        "malformed-json-500",
        "json",
        "server_crash",
        "parses request bodies without handling the parser's error: malformed JSON answers 500",
        _any_entity,
    ),
    Mutant(
        "non-object-body-500",
        "json",
        "server_crash",
        "uses any parsed body as an object: a JSON array, string, number or null answers 500",
        _any_entity,
    ),
    Mutant(
        "duplicate-overwrites", "client-id", "validation", "a POST with a used id overwrites that entity", _any_entity
    ),
    Mutant("missing-id-generated", "client-id", "validation", "generates an id when the POST has none", _any_entity),
    Mutant(
        "numeric-id-accepted", "client-id", "validation", "accepts a number as id (stored as a string)", _any_entity
    ),
    Mutant("loose-ids", "client-id", "validation", "accepts empty ids and ids that need percent-encoding", _any_entity),
    Mutant(
        "stores-unknown-keys",
        "unknown-keys",
        "wrong_response_format",
        "stores and returns body keys that are not fields",
        _any_entity,
    ),
    Mutant("list-envelope", "list", "wrong_response_format", 'wraps the list in {"items": [...]}', _any_entity),
    Mutant("read-missing-null", "read", "wrong_response_format", "answers 200 and null for an unknown id", _any_entity),
    Mutant("patch-no-validation", "update", "validation", "stores PATCH values without validating them", _any_entity),
    Mutant(
        "patch-not-atomic",
        "update",
        "validation",
        "writes each PATCH key before validating the next, so a rejected PATCH leaves changes",
        _atomicity,
    ),
    Mutant("patch-upserts", "update", "wrong_response_format", "PATCH of an unknown id creates it", _any_entity),
    Mutant("delete-unknown-ok", "delete", "wrong_response_format", "DELETE of an unknown id succeeds", _any_entity),
    Mutant("soft-delete-listed", "delete", "wrong_response_format", "a deleted entity stays in the list", _any_entity),
    Mutant("reset-noop", "reset", "missing_feature", "POST /reset answers 200 but clears nothing", _any_entity),
    Mutant(
        "required-not-enforced",
        "required",
        "validation",
        "stores null for a missing required field",
        lambda s, c: _fields(s, lambda f: f.required and not f.has_default),
    ),
    Mutant(
        "optional-required",
        "omitted",
        "default_value",
        "rejects a POST that omits an optional non-nullable field without a default",
        lambda s, c: _fields(s, lambda f: not (f.required or f.has_default or f.nullable) and f.kind != "ref_list"),
    ),
    Mutant(
        "null-means-default",
        "null",
        "validation",
        "stores the default for an explicit null",
        lambda s, c: _fields(s, lambda f: f.has_default),
    ),
    Mutant("integral-float-rejected", "types", "validation", "rejects 5 for a float field", _f("float")),
    Mutant("bool-is-number", "types", "validation", "accepts true and false as numbers", _f(("integer", "float"))),
    Mutant(
        "numeric-strings",
        "types",
        "validation",
        'coerces numeric strings such as "17" to numbers',
        _f(("integer", "float")),
    ),
    Mutant("integer-accepts-fraction", "types", "validation", "accepts 2.5 for an integer field", _f("integer")),
    Mutant(
        "length-bytes",
        "length",
        "validation",
        "counts UTF-8 bytes instead of characters",
        _f("string", lambda f: (f.max_length or 0) >= 1 or (f.min_length or 0) >= 2),
    ),
    Mutant("leap-day-always", "datetime", "validation", "accepts Feb 29 in every year", _f("datetime", _leap_probe)),
    Mutant("hour-24", "datetime", "validation", "accepts hour 24", _f("datetime", _late_probe)),
    Mutant(
        "iso-format-accepted",
        "datetime",
        "validation",
        "accepts ISO 8601 forms such as 2024-03-15T10:00:00",
        _f("datetime", _late_probe),
    ),
    Mutant(
        "zero-bound-ignored",
        "range",
        "validation",
        "ignores a bound of 0 (`if minimum and ...`)",
        _f(("integer", "float"), lambda f: f.minimum == 0 or f.maximum == 0),
    ),
    Mutant("enum-any-string", "enum", "enum_handling", "accepts any string for an enum field", _f("enum")),
    Mutant("unchecked-reference", "reference", "validation", "accepts an unknown id in a reference field", _f("ref")),
    Mutant(
        "unchecked-reference-list",
        "reference-list",
        "validation",
        "accepts unknown ids in a list-of-references field",
        _f("ref_list"),
    ),
    Mutant(
        "ref-list-null-accepted", "reference-list", "validation", "stores [] for an explicit null list", _f("ref_list")
    ),
    Mutant(
        "no-cascade-single", "cascade", "cascade_deletion", "leaves single references to a deleted entity", _f("ref")
    ),
    Mutant(
        "no-cascade-list",
        "cascade",
        "cascade_deletion",
        "leaves a deleted entity's id in reference lists",
        _f("ref_list"),
    ),
    Mutant(
        "cascade-deletes-referrers",
        "cascade",
        "cascade_deletion",
        "deletes the entities that referred to a deleted one (ON DELETE CASCADE)",
        _f(("ref", "ref_list")),
    ),
    Mutant(
        "ignore-delete_entity",
        "delete-entity",
        "regression",
        "ignores entity deletions",
        lambda s, c: any(
            isinstance(x, DeleteEntity) and endpoint_of(x.name) not in {e.endpoint for e in s.entities} for x in c
        ),
    ),
    Mutant(
        "keep-refs-to-deleted",
        "delete-entity",
        "missing_feature",
        "keeps other entities' reference fields to a deleted entity",
        _NO,
        _dropped_refs,
    ),
    Mutant(
        "ignore-delete_analytics",
        "unknown-path",
        "missing_feature",
        "keeps serving deleted analytics",
        lambda s, c: _explicit_gone(s, c, DeleteAnalytics),
    ),
    Mutant(
        "ignore-remove_action",
        "unknown-path",
        "missing_feature",
        "keeps serving removed actions",
        lambda s, c: _explicit_gone(s, c, RemoveAction),
    ),
    Mutant(
        "ignore-remove_guard",
        "guards",
        "business_logic",
        "keeps enforcing removed guards",
        _NO,
        lambda before, after, c: bool(removed_items(before, c, after)[0]) or stale_guard_refuses(before, c, after),
    ),
    Mutant(
        "ignore-remove_effect",
        "effects",
        "business_logic",
        "keeps applying removed effects",
        _NO,
        _effect_shows,
    ),
    Mutant(
        "keep-implied-removals",
        "unknown-path",
        "missing_feature",
        "keeps the analytics and actions a field deletion took with it",
        _NO,
        _implied_paths,
    ),
    Mutant(
        "deleted-field-kept",
        "delete-field",
        "missing_feature",
        "keeps returning a deleted field as null",
        lambda s, c: _explicit_gone(s, c, DeleteField),
    ),
    Mutant(
        "stale-renamed-key",
        "rename-field",
        "rename",
        "returns a renamed field's old key too (as null)",
        lambda s, c: _explicit_gone(s, c, RenameField),
    ),
    Mutant(
        "stale-renamed-analytics",
        "rename-field",
        "missing_feature",
        "keeps answering a renamed field's old analytics paths",
        _NO,
        _renamed_paths,
    ),
)
MUTANTS += tuple(Mutant(*spec) for spec in SPECS)  # null and empty inputs of computations, a removal
MUTANT_BY_BUG = {m.bug: m for m in MUTANTS}
