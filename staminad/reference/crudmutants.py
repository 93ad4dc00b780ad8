"""The catalogue's mutants of CRUD, JSON, validation, types and removals; `mutants` joins them with the others."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from staminad.bench.changes import (
    Change,
    DeleteAnalytics,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RenameField,
    transition,
)
from staminad.bench.removed import removed_items, shadowed, stale_guard_refuses
from staminad.bench.schema import Analytics, Field, State, endpoint_of
from staminad.reference.mutant import Mutant, any_field, carried


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
            at = carried(c.analytics.entity, c.analytics.field, changes[i + 1 :])
            if at and s.entity(at[0]) and Analytics(entity=at[0], op=c.analytics.op, field=at[1]) not in s.analytics:
                return True
        elif isinstance(c, RemoveAction) and kind is RemoveAction:
            at = carried(c.entity, None, changes[i + 1 :])
            if at and s.entity(at[0]) and s.action(at[0], c.name) is None:
                return True
        elif isinstance(c, DeleteField | RenameField) and kind is type(c):
            old = c.field if isinstance(c, DeleteField) else c.old
            at = carried(c.entity, None, changes[i + 1 :])
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
            at = carried(a.entity, None, changes[i + 1 :])
            if at and after.entity(at[0]) and Analytics(entity=at[0], op=a.op, field=a.field) not in after.analytics:
                return True
        for entity, name in gone_x:
            at = carried(entity, None, changes[i + 1 :])
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
                    at = carried(e.name, None, changes[i + 1 :])
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
                at = carried(a.entity, None, changes[i + 1 :])
                if at and after.entity(at[0]) and Analytics(entity=at[0], op=a.op, field=c.old) not in after.analytics:
                    return True
    return False


def _f(kind: str | tuple[str, ...], extra: Callable[[Field], bool] = lambda f: True) -> Callable[..., bool]:
    kinds = (kind,) if isinstance(kind, str) else kind
    return lambda s, c: any_field(s, lambda f: f.kind in kinds and extra(f))


def _effect_shows(before: State, after: State, changes: Sequence[Change]) -> bool:
    """An effect removed this turn that some data would show, run where it was among the remaining effects."""
    for entity, action, effect, index in removed_items(before, changes, after)[1]:
        a = after.action(entity, action)
        if a is not None and not shadowed(a.effects, effect, index):
            return True
    return False


_NO = lambda s, c: False  # noqa: E731 (exercised only through `removal`)


CRUD_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "drop-null-keys",
        "json",
        "default_value",
        "leaves null fields out of responses",
        lambda s, c: any_field(s, _nullable_out),
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
        lambda s, c: any_field(s, lambda f: f.has_default or not f.required),
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
        lambda s, c: any_field(s, lambda f: f.required and not f.has_default),
    ),
    Mutant(
        "optional-required",
        "omitted",
        "default_value",
        "rejects a POST that omits an optional non-nullable field without a default",
        lambda s, c: any_field(s, lambda f: not (f.required or f.has_default or f.nullable) and f.kind != "ref_list"),
    ),
    Mutant(
        "null-means-default",
        "null",
        "validation",
        "stores the default for an explicit null",
        lambda s, c: any_field(s, lambda f: f.has_default),
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
