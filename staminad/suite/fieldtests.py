"""Tests of one field: its type, default, bounds, enum values and references.

`field_tests` draws the body the field's tests vary (`FieldDraw`), then runs FIELD_TESTS in order; the tests
particular to a kind of field are KIND_TESTS's. The tables' order is the order of the draws, so it fixes every
test's data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from staminad.bench.schema import Entity, Field
from staminad.suite.builder import NO_VALUE, Builder, bad_date, falsy_value, ids_left, shift, whole_number
from staminad.suite.classes import EDGE_CLASSES, WRONG_TYPE_CLASSES, class_tests
from staminad.suite.data import datetime_probe, object_value, scalar_body, wide_string, wrong_type_values
from staminad.suite.draws import ident
from staminad.suite.inputclass import Ctx
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Equals, ListIds, req
from staminad.suite.plans import fixture_steps


class FieldDraw(NamedTuple):
    """A field's test body: `base` (with the fixtures `fix` its references need) and `without`, the same body
    without the field."""

    b: Builder
    e: Entity
    f: Field
    base: dict[str, Any]
    fix: list[Any]
    without: dict[str, Any]

    @property
    def ep(self) -> str:
        return self.e.endpoint

    @property
    def name(self) -> str:
        return f"{self.e.endpoint}_{self.f.name}"

    def post(self, body: dict[str, Any], why: str, **kw: Any) -> Any:
        """A POST of `body` to the field's entity."""
        return req("POST", f"/{self.ep}", body, why=why, **kw)

    def rejects(self, value: Any, why: str) -> Any:
        """A POST with the field set to `value`, which must be rejected."""
        return self.post({**self.without, self.f.name: value}, why, expect=REJECTED)

    def stores(self, value: Any, why: str) -> Any:
        """A POST with the field set to `value`, which must be stored as sent."""
        return self.post({**self.without, self.f.name: value}, why, checks=(Equals((self.f.name,), value),))


def _draw(b: Builder, e: Entity, f: Field) -> FieldDraw:
    base = scalar_body(b.rng, b.state, e, ident(b.rng, f"{e.endpoint}-f"))
    fix: list[Any] = []
    if f.kind in ("ref", "ref_list"):
        fix, base = fixture_steps(b.rng, b.state, e, base, only=f.name)
    return FieldDraw(b, e, f, base, fix, {k: v for k, v in base.items() if k != f.name})


def _presence(d: FieldDraw) -> None:
    """Left out, a required field is rejected, a defaulted one takes its default, an optional one is empty."""
    f, post = d.f, f"POST /{d.ep}"
    if f.required and not f.has_default:
        why = f"{post} without required {f.name} must fail"
        d.b.add(f"{d.name}_required", "validation", "required", [d.post(d.without, why, expect=REJECTED)])
    elif f.has_default:
        is_default = (Equals((f.name,), f.default),)
        steps = [
            d.post(d.without, f"{post} without {f.name} must store its default {f.default!r}", checks=is_default),
            req("GET", f"/{d.ep}/{d.base['id']}", checks=is_default, why="default is stored"),
        ]
        d.b.add(f"{d.name}_default", "default_value", "default", steps)
    else:
        empty: list[str] | None = [] if f.kind == "ref_list" else None
        why = f"{post} without optional {f.name} must store {empty!r}"
        step = d.post(d.without, why, checks=(Equals((f.name,), empty),))
        d.b.add(f"{d.name}_omitted", "default_value", "omitted", [step])


def _null(d: FieldDraw) -> None:
    f = d.f
    if f.nullable:
        d.b.add(f"{d.name}_accepts_null", "validation", "null", [d.stores(None, f"nullable {f.name} must accept null")])
    else:
        rule = "reference-list" if f.kind == "ref_list" else "null"
        step = d.rejects(None, f"non-nullable {f.name} must reject null")
        d.b.add(f"{d.name}_rejects_null", "validation", rule, [step])


def _wrong_types(d: FieldDraw) -> None:
    f = d.f
    for i, bad in enumerate(wrong_type_values(f)):
        steps = [d.rejects(bad, f"{f.kind} field {f.name} must reject {bad!r}")]
        if i == 0:  # a JSON object where a scalar or id belongs: the value a lookup or comparison crashes on
            steps.append(d.rejects(object_value(f, d.base), f"{f.kind} field {f.name} must reject an object"))
        kinds = WRONG_TYPE_CLASSES[f.kind][i : i + 1] + (("object_for_value",) if i == 0 else ())
        d.b.add(f"{d.name}_wrong_type_{i + 1}", "validation", "types", steps, kinds)


def _falsy(d: FieldDraw) -> None:
    f = d.f
    falsy = falsy_value(f)
    if falsy is NO_VALUE:
        return
    rule = "default" if f.has_default else "required" if f.required else "types"
    steps = [
        d.stores(falsy, f"{falsy!r} is a value like any other: {f.name} must store it"),
        req("GET", f"/{d.ep}/{d.base['id']}", checks=(Equals((f.name,), falsy),), why=f"{falsy!r} is stored"),
    ]
    d.b.add(f"{d.name}_falsy_value", "validation", rule, steps)


def _integral_float(d: FieldDraw) -> None:
    if d.f.kind != "float":
        return
    whole = whole_number(d.f)
    step = d.stores(whole, f"a float is any JSON number: {d.f.name}={whole} must be accepted")
    d.b.add(f"{d.name}_integral_float", "validation", "types", [step], ("integer_for_float",))


def _enum(d: FieldDraw) -> None:
    f, b = d.f, d.b
    enum = b.state.enum(f.enum or "")
    assert enum is not None
    steps = [
        d.post(
            {**d.without, "id": ident(b.rng, f"{d.ep}-v{i}"), f.name: v},
            f"enum value {v!r} must be accepted",
            checks=(Equals((f.name,), v),),
        )
        for i, v in enumerate(enum.values)
    ]
    b.add(f"{d.name}_enum_values", "enum_handling", "enum", steps, ("every_value",))
    step = d.rejects("not_a_listed_value", f"{f.name} must reject a value outside {enum.name}")
    b.add(f"{d.name}_enum_unknown", "enum_handling", "enum", [step], ("unknown",))
    cased = next((v.upper() for v in enum.values if v.upper() not in enum.values), None)
    if cased:
        step = d.rejects(cased, f"enum values are case-sensitive: {cased!r} must be rejected")
        b.add(f"{d.name}_enum_case", "enum_handling", "enum", [step], ("case_only",))


def _number_edges(f: Field) -> list[tuple[str, Any, bool]]:
    step = 1 if f.kind == "integer" else 0.01
    edges: list[tuple[str, Any, bool]] = []
    if f.minimum is not None:
        edges += [("at_min", f.minimum, True), ("below_min", f.minimum - step, False)]
    if f.maximum is not None:
        edges += [("at_max", f.maximum, True), ("above_max", f.maximum + step, False)]
    return edges


def _string_edges(f: Field) -> list[tuple[str, Any, bool]]:
    # Non-ASCII at the edges: bounds count characters, and these take two bytes each.
    edges: list[tuple[str, Any, bool]] = []
    if f.min_length:
        edges += [
            ("at_min_length", "m" * f.min_length, True),
            ("below_min_length", wide_string(f.min_length - 1), False),
        ]
    if f.max_length is not None:
        edges += [
            ("at_max_length", wide_string(f.max_length), True),
            ("above_max_length", "x" * (f.max_length + 1), False),
        ]
    return edges


def _datetime_edges(f: Field) -> list[tuple[str, Any, bool]]:
    # Each malformed value lies inside the bounds where one can, so only its form rejects it.
    edges: list[tuple[str, Any, bool]] = [
        ("bad_format", datetime_probe(f, "iso") or "2024-03-15T10:00:00", False),
        ("bad_calendar", bad_date(f), False),
        ("bad_hour", datetime_probe(f, "hour") or bad_date(f, hour=True), False),
        ("bad_leap_day", datetime_probe(f, "leap") or "2023-02-29 10:00:00", False),
        ("bad_no_seconds", datetime_probe(f, "short") or "2024-03-15 10:00", False),
    ]
    if f.after is not None:
        edges += [("at_after", f.after, True), ("before_after", shift(f.after, -1), False)]
    if f.before is not None:
        edges += [("at_before", f.before, True), ("after_before", shift(f.before, 1), False)]
    return edges


# A bounded kind -> (its rule, its edges: (label, value, accepted)).
EDGES: dict[str, tuple[str, Callable[[Field], list[tuple[str, Any, bool]]]]] = {
    "integer": ("range", _number_edges),
    "float": ("range", _number_edges),
    "string": ("length", _string_edges),
    "datetime": ("datetime", _datetime_edges),
}


def _bounds(d: FieldDraw) -> None:
    f = d.f
    rule, edges = EDGES[f.kind]
    for label, value, accepted in edges(f):
        if f.kind == "float" and isinstance(value, float):
            value = round(value, 2)
        step = d.post(
            {**d.without, f.name: value},
            f"{f.name}={value!r} must be {'accepted' if accepted else 'rejected'} (bounds inclusive)",
            expect=OK if accepted else REJECTED,
            checks=(Equals((f.name,), value),) if accepted else (),
        )
        d.b.add(f"{d.name}_{label}", "validation", rule, [step], (EDGE_CLASSES[label],))


def _references(d: FieldDraw) -> None:
    """A reference takes only an existing id of its target, reads back as ids, and survives its target's delete."""
    f, b = d.f, d.b
    target = b.state.entity(f.target or "")
    assert target is not None
    many = f.kind == "ref_list"
    rule = "reference-list" if many else "reference"
    unknown = ident(b.rng, "no-such-id")
    step = d.rejects([unknown] if many else unknown, f"{f.name} must reject an id that does not exist")
    b.add(f"{d.name}_unknown_reference", "validation", rule, [step], ("unknown_id",))
    other = next((x for x in b.state.entities if x.name != target.name), None)
    if other is not None:
        ob = scalar_body(b.rng, b.state, other, ident(b.rng, f"{other.endpoint}-x9"))
        steps = [
            req("POST", f"/{other.endpoint}", ob, why=f"create a {other.name}, which is not a {target.name}"),
            d.rejects(
                [ob["id"]] if many else ob["id"],
                f"{f.name} must reject the id of a {other.name}: it references {target.name}",
            ),
        ]
        b.add(f"{d.name}_reference_other_type", "validation", rule, steps, ("other_type",))
    value, base = d.base[f.name], d.base
    held = (Equals((f.name,), value),)
    steps = [
        *d.fix,
        d.post(base, f"{f.name} must hold the referenced id{'s' if many else ''}", checks=held),
        req("GET", f"/{d.ep}/{base['id']}", checks=held, why="references read back as ids"),
    ]
    b.add(f"{d.name}_reference_reads_back", "wrong_response_format", rule, steps, ("id_read_back",))
    _cascade(d, target.endpoint, many)


def _cascade(d: FieldDraw, target: str, many: bool) -> None:
    """Deleting a referenced entity keeps every entity that referred to it, without the reference."""
    f, ep, base = d.f, d.ep, d.base
    value = base[f.name]
    victim = value[0] if many else value
    left = [v for v in value if v != victim] if many else None
    second = {**base, "id": f"{base['id']}-2"}  # two referrers: every one of them must be updated
    kept = tuple(ids_left(d.fix, ep, (base["id"], second["id"]), victim))
    steps = [
        *d.fix,
        req("POST", f"/{ep}", base),
        req("POST", f"/{ep}", second),
        req("DELETE", f"/{target}/{victim}", expect=OK_OR_EMPTY, why="delete the referenced entity"),
        req(
            "GET",
            f"/{ep}",
            checks=(ListIds(kept),),
            why=f"deleting {victim} must not delete the {d.e.name} entities that referred to it",
        ),
        *(
            req(
                "GET",
                f"/{ep}/{referrer['id']}",
                checks=(Equals((f.name,), left),),
                why=f"deleting {victim} must {'remove it from' if many else 'null'} {f.name} of {referrer['id']}",
            )
            for referrer in (base, second)
        ),
    ]
    d.b.add(f"{d.name}_cascade", "cascade_deletion", "cascade", steps)


# A kind of field -> the tests only that kind has.
KIND_TESTS: dict[str, Callable[[FieldDraw], None]] = {
    "enum": _enum,
    "integer": _bounds,
    "float": _bounds,
    "string": _bounds,
    "datetime": _bounds,
    "ref": _references,
    "ref_list": _references,
}


def _kind(d: FieldDraw) -> None:
    if (make := KIND_TESTS.get(d.f.kind)) is not None:
        make(d)


def _classes(d: FieldDraw) -> None:
    ctx = Ctx(d.b.state, d.b.class_rng, d.e, d.f, d.without, d.base, d.fix)
    for name, category, rule, classes, steps in class_tests(ctx):
        d.b.add(name, category, rule, steps, classes)


# The field's tests, in the order they draw their data (a new maker goes last, so no other test's data moves).
FIELD_TESTS: tuple[Callable[[FieldDraw], None], ...] = (
    _presence,
    _null,
    _wrong_types,
    _falsy,
    _integral_float,
    _kind,
    _classes,
)


def field_tests(b: Builder, e: Entity, f: Field) -> None:
    """Add every test of field `f` of entity `e` to `b` (FIELD_TESTS over its drawn body)."""
    d = _draw(b, e, f)
    for make in FIELD_TESTS:
        make(d)


__all__ = ["EDGES", "FIELD_TESTS", "KIND_TESTS", "FieldDraw", "field_tests"]
