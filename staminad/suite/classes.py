"""The catalogue of input classes: per README rule and field type, the kinds of value a server must handle.

Each class is read off a rule's text and the field's type, not off known bugs: a string is any JSON
string (so the empty one, surrounding whitespace, control characters and multi-byte text are values
like any other), lengths count code points, an id is a case-sensitive string, a float is any JSON
number, a datetime has exactly one valid form, a reference names an existing entity of one type. A
class that holds valid values is sent and then read back, by the POST answer and a later GET, so a
server that trims, re-cases, re-formats, coerces or truncates shows.

`CATALOGUE` lists every class with the condition under which it applies to a field (or an entity),
and then the classes of computations' inputs (`computations`), which apply to a state.
Classes with a `make` are built here (`class_tests`, `entity_class_tests`); the others are tests
`generate` already wrote, which it tags with their class names (`WRONG_TYPE_CLASSES`, `EDGE_CLASSES`).
A test names the classes it covers in `Test.classes`; `applicable` and `covered` are the two sides of
the coverage gate in `validate`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from staminad.bench.schema import Entity, Field, State
from staminad.suite.computations import COMPUTATION_CLASSES, ComputationClass
from staminad.suite.data import datetime_value, scalar_body
from staminad.suite.draws import ident
from staminad.suite.model import OK, OK_OR_EMPTY, REJECTED, Equals, IsInteger, ListIds, Step, Suite, req
from staminad.suite.plans import target_body

ENTITY = "entity"  # the `kinds` of a class that applies to an entity, not to one of its fields
MANY = 25  # more items than a server might put on one page or cap a list at (10, 20 and 25 are common)
LARGE_INTEGER = 2**40 + 7  # beyond 32 bits, exact in a double
LARGE_FLOAT = 1.5e300


@dataclass(frozen=True)
class Ctx:
    """What a class's tests are built from: the field, a valid body without it, and its reference fixtures."""

    state: State
    rng: random.Random
    entity: Entity
    field: Field | None
    without: dict[str, Any]
    base: dict[str, Any]
    fix: list[Step]


Maker = Callable[[Ctx], list[Step]]
When = Callable[[State, Entity, Field | None], bool]


@dataclass(frozen=True)
class InputClass:
    rule: str
    name: str
    kinds: tuple[str, ...]
    text: str
    when: When
    make: Maker | None = None  # None: `generate` writes the test and tags it

    def applies(self, state: State, entity: Entity, field: Field | None) -> bool:
        if field is None:
            return ENTITY in self.kinds and self.when(state, entity, None)
        return field.kind in self.kinds and self.when(state, entity, field)


def _always(state: State, entity: Entity, f: Field | None) -> bool:
    return True


def _f(ctx: Ctx) -> Field:
    assert ctx.field is not None
    return ctx.field


def _sized(f: Field, head: str, middle: str, tail: str) -> str | None:
    """`head + middle* + tail` padded to the field's minimum length, or None if it cannot fit its bounds."""
    n = max(len(head) + len(tail) + 1, f.min_length or 0)
    if f.max_length is not None and n > f.max_length:
        return None
    return head + middle * (n - len(head) - len(tail)) + tail


_TEXTS: dict[str, tuple[str, str, str]] = {
    "surrounding_whitespace": ("  ", "w", " \t"),
    "control_characters": ("a\t", "c", "\n\u0001\u001f"),
    "non_ascii": ("Zoë–中文", "ß", "e\u0301"),  # the last is e + a combining accent: not to be normalised
}


def _stored_back(ctx: Ctx, value: Any, why: str, integer: bool = False, n: int = 0) -> list[Step]:
    """POST the value, and read it back from the answer and from a GET, unchanged."""
    f, ep = _f(ctx), ctx.entity.endpoint
    oid = f"{ctx.without['id']}-{n}" if n else ctx.without["id"]
    checks: tuple[Any, ...] = (Equals((f.name,), value),) + ((IsInteger((f.name,)),) if integer else ())
    return [
        *ctx.fix,
        req("POST", f"/{ep}", {**ctx.without, "id": oid, f.name: value}, checks=checks, why=why),
        req("GET", f"/{ep}/{oid}", checks=checks, why=f"{f.name} must read back exactly as sent"),
    ]


def _rejected(ctx: Ctx, values: list[Any], why: str) -> list[Step]:
    f, ep = _f(ctx), ctx.entity.endpoint
    return [req("POST", f"/{ep}", {**ctx.without, f.name: v}, expect=REJECTED, why=f"{why}: {v!r}") for v in values]


def _text(name: str) -> Maker:
    def make(ctx: Ctx) -> list[Step]:
        value = _sized(_f(ctx), *_TEXTS[name])
        assert value is not None
        return _stored_back(ctx, value, f"a string is any JSON string: {value!r} is stored as sent")

    return make


def _text_fits(name: str) -> When:
    return lambda s, e, f: f is not None and _sized(f, *_TEXTS[name]) is not None


def _whole(f: Field) -> int | None:
    lo = math.ceil(f.minimum) if f.minimum is not None else None
    hi = math.floor(f.maximum) if f.maximum is not None else None
    v = (lo + 1 if hi is None or lo + 1 <= hi else lo) if lo is not None else (hi - 1 if hi is not None else 3)
    return v if (hi is None or v <= hi) and (lo is None or v >= lo) else None


def _fine(f: Field) -> float | None:
    """A number with nine significant decimals inside the bounds: rounding or truncating it shows."""
    lo = f.minimum if f.minimum is not None else 0
    span = (f.maximum - lo) if f.maximum is not None else 100
    v = round(lo + span * 0.123456789, 9) if span > 0 else None
    return v if v is not None and v != round(v, 2) and (f.maximum is None or v <= f.maximum) else None


def _large(f: Field) -> list[int | float]:
    big = LARGE_INTEGER if f.kind == "integer" else LARGE_FLOAT
    return ([big] if f.maximum is None else []) + ([-big] if f.minimum is None else [])


def _make_large(ctx: Ctx) -> list[Step]:
    f = _f(ctx)
    steps: list[Step] = []
    for i, v in enumerate(_large(f)):
        steps += _stored_back(ctx, v, f"{f.name} has no bound on this side: {v!r} is valid", f.kind == "integer", i)
    return steps


def _make_integral(ctx: Ctx) -> list[Step]:
    v = _whole(_f(ctx))
    assert v is not None
    return _stored_back(ctx, float(v), f"a float field accepts {float(v)!r}")


def _make_fine(ctx: Ctx) -> list[Step]:
    v = _fine(_f(ctx))
    assert v is not None
    return _stored_back(ctx, v, f"{v!r} is stored without rounding")


def _make_empty_string(ctx: Ctx) -> list[Step]:
    if _f(ctx).min_length:
        return _rejected(ctx, [""], "the empty string is shorter than the minimum length")
    return _stored_back(ctx, "", "the empty string is a string like any other")


def _padded(ctx: Ctx) -> list[Step]:
    f = _f(ctx)
    enum = ctx.state.enum(f.enum or "")
    assert enum is not None
    v = enum.values[0]
    return _rejected(ctx, [f" {v}", f"{v} "], "enum values match exactly, spaces included")


def _leap_ok(f: Field) -> str | None:
    lo, hi = f.after or "0000-01-01 00:00:00", f.before or "9999-12-31 23:59:59"
    for y in (2024, 2028, 2000, *range(int(lo[:4]), min(int(hi[:4]), 9999) + 1)):
        if y % 4 == 0 and (y % 100 or y % 400 == 0):
            for t in ("00:00:00", "23:59:59"):
                c = f"{y:04d}-02-29 {t}"
                if lo <= c <= hi:
                    return c
    return None


def _make_valid_datetime(ctx: Ctx) -> list[Step]:
    f = _f(ctx)
    v = _leap_ok(f) or datetime_value(ctx.rng, f)
    return _stored_back(ctx, v, f"{v!r} is a valid datetime and reads back in the same form")


def _make_time_zone(ctx: Ctx) -> list[Step]:
    v = datetime_value(ctx.rng, _f(ctx))
    return _rejected(ctx, [f"{v}Z", f"{v}+00:00"], "a datetime has no time zone")


def _victim(ctx: Ctx) -> str:
    value = ctx.base[_f(ctx).name]
    return str(value[0] if isinstance(value, list) else value)


def _wrap(ctx: Ctx, ids: list[str]) -> Any:
    return ids if _f(ctx).kind == "ref_list" else ids[0]


def _target(ctx: Ctx) -> Entity:
    t = ctx.state.entity(_f(ctx).target or "")
    assert t is not None
    return t


def _make_deleted(ctx: Ctx) -> list[Step]:
    victim, t = _victim(ctx), _target(ctx)
    return [
        *ctx.fix,
        req("DELETE", f"/{t.endpoint}/{victim}", expect=OK_OR_EMPTY, why=f"delete the {t.name} {victim}"),
        *_rejected(ctx, [_wrap(ctx, [victim])], f"{_f(ctx).name} must reject the id of a deleted {t.name}"),
    ]


def _make_case(ctx: Ctx) -> list[Step]:
    victim = _victim(ctx)
    why = f"ids are case-sensitive: {victim.upper()!r} names no {_target(ctx).name}"
    return [*ctx.fix, *_rejected(ctx, [_wrap(ctx, [victim.upper()])], why)]


def _targets(ctx: Ctx, n: int) -> tuple[list[Step], list[str]]:
    t = _target(ctx)
    bodies = [target_body(ctx.rng, ctx.state, t) for _ in range(n)]
    return [req("POST", f"/{t.endpoint}", b, why=f"create a {t.name} to reference") for b in bodies], [
        b["id"] for b in bodies
    ]


def _list_of(n: int) -> Maker:
    def make(ctx: Ctx) -> list[Step]:
        made, ids = _targets(ctx, n)
        ctx2 = Ctx(ctx.state, ctx.rng, ctx.entity, ctx.field, ctx.without, ctx.base, made)
        return _stored_back(ctx2, ids, f"{_f(ctx).name} holds the {n} ids sent, in order")

    return make


def _make_duplicates(ctx: Ctx) -> list[Step]:
    f, ep = _f(ctx), ctx.entity.endpoint
    victim = _victim(ctx)
    why = "the README does not say whether a repeated id is kept, merged or rejected: any of them, never a 500"
    body = {**ctx.without, f.name: [victim, victim]}
    return [*ctx.fix, req("POST", f"/{ep}", body, expect=(*OK, *REJECTED), why=why)]


def _other_entity(state: State, e: Entity, f: Field | None) -> bool:
    return f is not None and any(x.name != f.target for x in state.entities)


def _make_id_case(ctx: Ctx) -> list[Step]:
    e, ep = ctx.entity, ctx.entity.endpoint
    low = ident(ctx.rng, f"{ep}-case")
    up = low.upper()
    a, b = scalar_body(ctx.rng, ctx.state, e, low), scalar_body(ctx.rng, ctx.state, e, up)
    why = "ids are case-sensitive strings: ids that differ only in case name two entities"
    return [
        req("POST", f"/{ep}", a, checks=(Equals(("id",), low),), why=why),
        req("POST", f"/{ep}", b, checks=(Equals(("id",), up),), why=why),
        req("GET", f"/{ep}/{low}", checks=(Equals(("id",), low),), why=f"{low} reads back as itself"),
        req("GET", f"/{ep}/{up}", checks=(Equals(("id",), up),), why=f"{up} reads back as itself"),
        req("GET", f"/{ep}", checks=(ListIds((low, up)),), why="both are listed"),
    ]


def _make_list_sizes(ctx: Ctx) -> list[Step]:
    e, ep = ctx.entity, ctx.entity.endpoint
    bodies = [scalar_body(ctx.rng, ctx.state, e, ident(ctx.rng, f"{ep}-n{i}")) for i in range(MANY)]
    ids = [b["id"] for b in bodies]
    return [
        req("GET", f"/{ep}", checks=(ListIds(()),), why="an empty store lists nothing, as []"),
        req("POST", f"/{ep}", bodies[0]),
        req("GET", f"/{ep}", checks=(ListIds((ids[0],)),), why="one entity is listed as a one-item array"),
        *(req("POST", f"/{ep}", b) for b in bodies[1:]),
        req("GET", f"/{ep}", checks=(ListIds(tuple(ids)),), why=f"GET /{ep} lists all {MANY}, never one page"),
    ]


def _c(
    rule: str, name: str, kinds: tuple[str, ...], text: str, when: When = _always, make: Maker | None = None
) -> InputClass:
    return InputClass(rule=rule, name=name, kinds=kinds, text=text, when=when, make=make)


def _has(attr: str) -> When:
    return lambda s, e, f: f is not None and bool(getattr(f, attr))


def _bounded(s: State, e: Entity, f: Field | None) -> bool:
    return f is not None and (f.minimum is not None or f.maximum is not None or bool(f.after) or bool(f.before))


def _has_max_length(s: State, e: Entity, f: Field | None) -> bool:
    return f is not None and f.max_length is not None


def _cased(s: State, e: Entity, f: Field | None) -> bool:
    enum = s.enum(f.enum or "") if f else None
    return enum is not None and any(v.upper() not in enum.values for v in enum.values)


_NUM = ("integer", "float")
_REFS = ("ref", "ref_list")
_S = ("string",)

FIELD_CLASSES: tuple[InputClass, ...] = (
    # ids and lists (per entity)
    _c("client-id", "number", (ENTITY,), "a number where the string id belongs"),
    _c("client-id", "empty", (ENTITY,), "the empty id"),
    _c("client-id", "other_characters", (ENTITY,), "an id with a space or a slash"),
    _c("client-id", "every_allowed_character", (ENTITY,), "an id using A-Z a-z 0-9 - _ . ~"),
    _c("client-id", "duplicate", (ENTITY,), "an id already taken"),
    _c("client-id", "case_only", (ENTITY,), "two ids differing only in case", make=_make_id_case),
    _c("list", "sizes", (ENTITY,), f"no entity, one, and {MANY} (more than a page)", make=_make_list_sizes),
    # types
    _c("types", "number_for_string", _S, "a number where a string belongs"),
    _c("types", "boolean_for_string", _S, "a boolean where a string belongs"),
    _c(
        "types",
        "empty_string",
        _S,
        "the empty string",
        lambda s, e, f: f is not None and not f.min_length,
        _make_empty_string,
    ),
    _c(
        "types",
        "surrounding_whitespace",
        _S,
        "leading and trailing spaces and tabs",
        _text_fits("surrounding_whitespace"),
        _text("surrounding_whitespace"),
    ),
    _c(
        "types",
        "control_characters",
        _S,
        "tab, newline and other control characters",
        _text_fits("control_characters"),
        _text("control_characters"),
    ),
    _c("types", "non_ascii", _S, "multi-byte and combining characters", _text_fits("non_ascii"), _text("non_ascii")),
    _c("types", "string_for_number", _NUM, "a numeric string where a number belongs"),
    _c("types", "boolean_for_number", _NUM, "true or false where a number belongs"),
    _c("types", "fraction_for_integer", ("integer",), "2.5 for an integer"),
    _c(
        "types",
        "large_number",
        _NUM,
        "a number far beyond 32 bits, where no bound forbids it",
        lambda s, e, f: f is not None and bool(_large(f)),
        _make_large,
    ),
    _c("types", "integer_for_float", ("float",), "a whole number for a float"),
    _c(
        "types",
        "integral_float",
        ("float",),
        "a float written with a zero fraction (5.0)",
        lambda s, e, f: f is not None and _whole(f) is not None,
        _make_integral,
    ),
    _c(
        "types",
        "fine_fraction",
        ("float",),
        "a float with nine decimals",
        lambda s, e, f: f is not None and _fine(f) is not None,
        _make_fine,
    ),
    _c("types", "string_for_boolean", ("boolean",), '"true" for a boolean'),
    _c("types", "number_for_boolean", ("boolean",), "1 for a boolean"),
    _c("types", "number_for_enum", ("enum",), "a number for an enum"),
    _c("types", "number_for_datetime", ("datetime",), "a number for a datetime"),
    _c("types", "t_separator", ("datetime",), "an ISO 8601 string with `T`, where this format belongs"),
    _c("types", "number_for_id", ("ref",), "a number where an id belongs"),
    _c("types", "string_for_list", ("ref_list",), "a string where a list belongs"),
    _c("types", "number_in_list", ("ref_list",), "a number inside a list of ids"),
    _c(
        "types",
        "object_for_value",
        ("string", "integer", "float", "boolean", "enum", "datetime", *_REFS),
        "a JSON object where a value belongs",
    ),
    # bounds
    _c("range", "at_bounds", _NUM, "the bounds themselves", _bounded),
    _c("range", "outside_bounds", _NUM, "just outside the bounds", _bounded),
    _c("length", "empty_string", _S, "the empty string under a minimum length", _has("min_length"), _make_empty_string),
    _c("length", "at_min_length", _S, "exactly the minimum length", _has("min_length")),
    _c("length", "multibyte_below_min", _S, "multi-byte text one short of the minimum", _has("min_length")),
    _c("length", "multibyte_at_max", _S, "multi-byte text at exactly the maximum", _has_max_length),
    _c("length", "above_max_length", _S, "one character over the maximum", _has_max_length),
    # datetimes: every form the rule names as invalid, and a valid one read back
    _c("datetime", "t_separator", ("datetime",), "`T` between date and time"),
    _c("datetime", "impossible_date", ("datetime",), "February 30"),
    _c("datetime", "hour_24", ("datetime",), "24:00:00"),
    _c("datetime", "not_leap_year", ("datetime",), "February 29 of a common year"),
    _c("datetime", "missing_seconds", ("datetime",), "hh:mm without seconds"),
    _c("datetime", "time_zone", ("datetime",), "a Z or +00:00 suffix", make=_make_time_zone),
    _c(
        "datetime",
        "valid_read_back",
        ("datetime",),
        "a valid datetime (a leap day where the bounds allow)",
        make=_make_valid_datetime,
    ),
    _c("datetime", "at_bounds", ("datetime",), "the bounds themselves", _bounded),
    _c("datetime", "outside_bounds", ("datetime",), "one second outside the bounds", _bounded),
    # enums
    _c("enum", "every_value", ("enum",), "each listed value"),
    _c("enum", "unknown", ("enum",), "a value not listed"),
    _c("enum", "case_only", ("enum",), "a listed value in another case", _cased),
    _c("enum", "surrounding_whitespace", ("enum",), "a listed value with a space around it", make=_padded),
    # references
    _c("reference", "unknown_id", ("ref",), "an id nothing has"),
    _c("reference", "other_type", ("ref",), "the id of an entity of another type", _other_entity),
    _c("reference", "deleted_id", ("ref",), "the id of a deleted entity", make=_make_deleted),
    _c("reference", "case_only", ("ref",), "an existing id in another case", make=_make_case),
    _c("reference", "id_read_back", ("ref",), "an existing id, read back as the id"),
    _c("reference-list", "id_read_back", ("ref_list",), "existing ids, read back as the ids"),
    _c("reference-list", "unknown_id", ("ref_list",), "an id nothing has"),
    _c("reference-list", "other_type", ("ref_list",), "the id of an entity of another type", _other_entity),
    _c("reference-list", "deleted_id", ("ref_list",), "the id of a deleted entity", make=_make_deleted),
    _c("reference-list", "case_only", ("ref_list",), "an existing id in another case", make=_make_case),
    _c("reference-list", "empty", ("ref_list",), "an explicit []", make=_list_of(0)),
    _c("reference-list", "one", ("ref_list",), "a single id", make=_list_of(1)),
    _c("reference-list", "many", ("ref_list",), f"{MANY} ids", make=_list_of(MANY)),
    _c("reference-list", "duplicates", ("ref_list",), "the same id twice", make=_make_duplicates),
)
# ... and the null and empty inputs of guards, effects and analytics (`computations`).
CATALOGUE: tuple[InputClass | ComputationClass, ...] = (*FIELD_CLASSES, *COMPUTATION_CLASSES)

# The classes of tests `generate` writes itself, by the index of the value in `data.wrong_type_values`.
WRONG_TYPE_CLASSES: dict[str, tuple[str, ...]] = {
    "string": ("number_for_string", "boolean_for_string"),
    "integer": ("string_for_number", "fraction_for_integer", "boolean_for_number"),
    "float": ("string_for_number", "boolean_for_number"),
    "boolean": ("string_for_boolean", "number_for_boolean"),
    "enum": ("number_for_enum",),
    "datetime": ("number_for_datetime", "t_separator"),
    "ref": ("number_for_id",),
    "ref_list": ("string_for_list", "number_in_list"),
}
# ... and of its bounds tests, by their label.
EDGE_CLASSES: dict[str, str] = {
    "at_min": "at_bounds",
    "at_max": "at_bounds",
    "below_min": "outside_bounds",
    "above_max": "outside_bounds",
    "at_min_length": "at_min_length",
    "below_min_length": "multibyte_below_min",
    "at_max_length": "multibyte_at_max",
    "above_max_length": "above_max_length",
    "bad_format": "t_separator",
    "bad_calendar": "impossible_date",
    "bad_hour": "hour_24",
    "bad_leap_day": "not_leap_year",
    "bad_no_seconds": "missing_seconds",
    "at_after": "at_bounds",
    "at_before": "at_bounds",
    "before_after": "outside_bounds",
    "after_before": "outside_bounds",
}


def class_tests(ctx: Ctx) -> list[tuple[str, str, str, tuple[str, ...], list[Step]]]:
    """(name, category, rule, classes, steps) of every class built here that applies to the context's field."""
    f = _f(ctx)
    out: list[tuple[str, str, str, tuple[str, ...], list[Step]]] = []
    for c in FIELD_CLASSES:
        if c.make is not None and c.applies(ctx.state, ctx.entity, f):
            out.append(
                (f"{ctx.entity.endpoint}_{f.name}_{c.rule}_{c.name}", "validation", c.rule, (c.name,), c.make(ctx))
            )
    return out


def entity_class_tests(
    state: State, rng: random.Random, e: Entity
) -> list[tuple[str, str, str, tuple[str, ...], list[Step]]]:
    """The entity-level classes built here."""
    ctx = Ctx(state, rng, e, None, {}, {}, [])
    return [
        (f"{e.endpoint}_{c.rule}_{c.name}", "validation", c.rule, (c.name,), c.make(ctx))
        for c in FIELD_CLASSES
        if c.make is not None and c.applies(state, e, None)
    ]


Cell = tuple[str, str]  # (rule, class)


def applicable(state: State) -> set[Cell]:
    """Every (rule, class) some entity or field of the state can be tested with."""
    out: set[Cell] = {(c.rule, c.name) for c in COMPUTATION_CLASSES if c.when(state)}
    for e in state.entities:
        for c in FIELD_CLASSES:
            if c.applies(state, e, None) or any(c.applies(state, e, f) for f in e.fields):
                out.add((c.rule, c.name))
    return out


def covered(suite: Suite) -> set[Cell]:
    """Every (rule, class) some test of the suite names."""
    return {(t.rule, c) for t in suite.tests for c in t.classes}
