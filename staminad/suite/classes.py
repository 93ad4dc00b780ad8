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

import random

from staminad.bench.schema import Entity, State
from staminad.suite.computations import COMPUTATION_CLASSES, ComputationClass
from staminad.suite.inputclass import (
    ENTITY,
    MANY,
    NUMERIC,
    REFERENCES,
    STRING,
    Ctx,
    InputClass,
    bounded,
    cased,
    entry,
    field_of,
    fine,
    has,
    has_max_length,
    large,
    list_of,
    make_case,
    make_deleted,
    make_empty_string,
    make_fine,
    make_id_case,
    make_integral,
    make_large,
    make_list_sizes,
    make_time_zone,
    make_valid_datetime,
    other_entity,
    padded,
    text,
    text_fits,
    whole,
)
from staminad.suite.model import Step, Suite
from staminad.suite.strictinputs import (
    make_cascade_repeats,
    make_near_miss,
    make_non_finite,
    make_patch_no_field,
    make_repeated_ids,
)

FIELD_CLASSES: tuple[InputClass, ...] = (
    # ids and lists (per entity)
    entry("client-id", "number", (ENTITY,), "a number where the string id belongs"),
    entry("client-id", "empty", (ENTITY,), "the empty id"),
    entry("client-id", "other_characters", (ENTITY,), "an id with a space or a slash"),
    entry("client-id", "every_allowed_character", (ENTITY,), "an id using A-Z a-z 0-9 - _ . ~"),
    entry("client-id", "duplicate", (ENTITY,), "an id already taken"),
    entry("client-id", "case_only", (ENTITY,), "two ids differing only in case", make=make_id_case),
    entry("list", "sizes", (ENTITY,), f"no entity, one, and {MANY} (more than a page)", make=make_list_sizes),
    # types
    entry("types", "number_for_string", STRING, "a number where a string belongs"),
    entry("types", "boolean_for_string", STRING, "a boolean where a string belongs"),
    entry(
        "types",
        "empty_string",
        STRING,
        "the empty string",
        lambda s, e, f: f is not None and not f.min_length,
        make_empty_string,
    ),
    entry(
        "types",
        "surrounding_whitespace",
        STRING,
        "leading and trailing spaces and tabs",
        text_fits("surrounding_whitespace"),
        text("surrounding_whitespace"),
    ),
    entry(
        "types",
        "control_characters",
        STRING,
        "tab, newline and other control characters",
        text_fits("control_characters"),
        text("control_characters"),
    ),
    entry(
        "types", "non_ascii", STRING, "multi-byte and combining characters", text_fits("non_ascii"), text("non_ascii")
    ),
    entry("types", "string_for_number", NUMERIC, "a numeric string where a number belongs"),
    entry("types", "boolean_for_number", NUMERIC, "true or false where a number belongs"),
    entry("types", "fraction_for_integer", ("integer",), "2.5 for an integer"),
    entry(
        "types",
        "large_number",
        NUMERIC,
        "a number far beyond 32 bits, where no bound forbids it",
        lambda s, e, f: f is not None and bool(large(f)),
        make_large,
    ),
    entry("types", "integer_for_float", ("float",), "a whole number for a float"),
    entry(
        "types",
        "integral_float",
        ("float",),
        "a float written with a zero fraction (5.0)",
        lambda s, e, f: f is not None and whole(f) is not None,
        make_integral,
    ),
    entry(
        "types",
        "fine_fraction",
        ("float",),
        "a float with nine decimals",
        lambda s, e, f: f is not None and fine(f) is not None,
        make_fine,
    ),
    entry("types", "string_for_boolean", ("boolean",), '"true" for a boolean'),
    entry("types", "number_for_boolean", ("boolean",), "1 for a boolean"),
    entry("types", "number_for_enum", ("enum",), "a number for an enum"),
    entry("types", "number_for_datetime", ("datetime",), "a number for a datetime"),
    entry("types", "t_separator", ("datetime",), "an ISO 8601 string with `T`, where this format belongs"),
    entry("types", "number_for_id", ("ref",), "a number where an id belongs"),
    entry("types", "string_for_list", ("ref_list",), "a string where a list belongs"),
    entry("types", "number_in_list", ("ref_list",), "a number inside a list of ids"),
    entry(
        "types",
        "object_for_value",
        ("string", "integer", "float", "boolean", "enum", "datetime", *REFERENCES),
        "a JSON object where a value belongs",
    ),
    # bounds
    entry("range", "at_bounds", NUMERIC, "the bounds themselves", bounded),
    entry("range", "outside_bounds", NUMERIC, "just outside the bounds", bounded),
    entry(
        "length",
        "empty_string",
        STRING,
        "the empty string under a minimum length",
        has("min_length"),
        make_empty_string,
    ),
    entry("length", "at_min_length", STRING, "exactly the minimum length", has("min_length")),
    entry("length", "multibyte_below_min", STRING, "multi-byte text one short of the minimum", has("min_length")),
    entry("length", "multibyte_at_max", STRING, "multi-byte text at exactly the maximum", has_max_length),
    entry("length", "above_max_length", STRING, "one character over the maximum", has_max_length),
    # datetimes: every form the rule names as invalid, and a valid one read back
    entry("datetime", "t_separator", ("datetime",), "`T` between date and time"),
    entry("datetime", "impossible_date", ("datetime",), "February 30"),
    entry("datetime", "hour_24", ("datetime",), "24:00:00"),
    entry("datetime", "not_leap_year", ("datetime",), "February 29 of a common year"),
    entry("datetime", "missing_seconds", ("datetime",), "hh:mm without seconds"),
    entry("datetime", "time_zone", ("datetime",), "a Z or +00:00 suffix", make=make_time_zone),
    entry(
        "datetime",
        "valid_read_back",
        ("datetime",),
        "a valid datetime (a leap day where the bounds allow)",
        make=make_valid_datetime,
    ),
    entry("datetime", "at_bounds", ("datetime",), "the bounds themselves", bounded),
    entry("datetime", "outside_bounds", ("datetime",), "one second outside the bounds", bounded),
    # enums
    entry("enum", "every_value", ("enum",), "each listed value"),
    entry("enum", "unknown", ("enum",), "a value not listed"),
    entry("enum", "case_only", ("enum",), "a listed value in another case", cased),
    entry("enum", "surrounding_whitespace", ("enum",), "a listed value with a space around it", make=padded),
    # references
    entry("reference", "unknown_id", ("ref",), "an id nothing has"),
    entry("reference", "other_type", ("ref",), "the id of an entity of another type", other_entity),
    entry("reference", "deleted_id", ("ref",), "the id of a deleted entity", make=make_deleted),
    entry("reference", "case_only", ("ref",), "an existing id in another case", make=make_case),
    entry("reference", "id_read_back", ("ref",), "an existing id, read back as the id"),
    entry("reference-list", "id_read_back", ("ref_list",), "existing ids, read back as the ids"),
    entry("reference-list", "unknown_id", ("ref_list",), "an id nothing has"),
    entry("reference-list", "other_type", ("ref_list",), "the id of an entity of another type", other_entity),
    entry("reference-list", "deleted_id", ("ref_list",), "the id of a deleted entity", make=make_deleted),
    entry("reference-list", "case_only", ("ref_list",), "an existing id in another case", make=make_case),
    entry("reference-list", "empty", ("ref_list",), "an explicit []", make=list_of(0)),
    entry("reference-list", "one", ("ref_list",), "a single id", make=list_of(1)),
    entry("reference-list", "many", ("ref_list",), f"{MANY} ids", make=list_of(MANY)),
    entry("reference-list", "duplicates", ("ref_list",), "an id twice, another between, kept", make=make_repeated_ids),
    # what lenient parsers and set-minded stores let through (`strictinputs`); last, so no other draw moves
    entry("types", "non_finite", NUMERIC, "NaN, Infinity and -Infinity (no JSON)", make=make_non_finite),
    entry("datetime", "near_miss", ("datetime",), "unpadded or fractional seconds, spaces", make=make_near_miss),
    entry(
        "cascade",
        "repeated_id",
        ("ref_list",),
        "a deleted target listed twice",
        make=make_cascade_repeats,
        category="cascade_deletion",
    ),
    entry("update", "no_field", (ENTITY,), "a PATCH of `{}` or of only an unknown key", make=make_patch_no_field),
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
    f = field_of(ctx)
    out: list[tuple[str, str, str, tuple[str, ...], list[Step]]] = []
    for c in FIELD_CLASSES:
        if c.make is not None and c.applies(ctx.state, ctx.entity, f):
            out.append(
                (f"{ctx.entity.endpoint}_{f.name}_{c.rule}_{c.name}", c.category, c.rule, (c.name,), c.make(ctx))
            )
    return out


def entity_class_tests(
    state: State, rng: random.Random, e: Entity
) -> list[tuple[str, str, str, tuple[str, ...], list[Step]]]:
    """The entity-level classes built here."""
    ctx = Ctx(state, rng, e, None, {}, {}, [])
    return [
        (f"{e.endpoint}_{c.rule}_{c.name}", c.category, c.rule, (c.name,), c.make(ctx))
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
