"""Test data: valid values inside a field's bounds, and values each validation rule must reject.

All draws come from the caller's seeded `random.Random`, so a suite is reproducible. Floats carry
two decimals, so sums and averages exercise real float arithmetic (an average is rarely round).
"""

from __future__ import annotations

import datetime as dt
import random
import string
from typing import Any

from staminad.bench.schema import DATETIME_MAX, DATETIME_MIN, Entity, Field, State

_FMT = "%Y-%m-%d %H:%M:%S"


def _word(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def string_value(rng: random.Random, f: Field) -> str:
    lo = f.min_length or 0
    hi = f.max_length if f.max_length is not None else max(lo, 12) + 8
    n = rng.randint(max(lo, min(3, hi)), min(hi, max(lo, 12)))
    return _word(rng, n)


def number_value(rng: random.Random, f: Field) -> int | float:
    if f.kind == "integer":
        lo = int(f.minimum) if f.minimum is not None else -50
        hi = int(f.maximum) if f.maximum is not None else lo + 500
        if f.minimum is None and f.maximum is not None:
            lo = hi - 500
        return rng.randint(lo, hi)
    lo_f = float(f.minimum) if f.minimum is not None else -50.0
    hi_f = float(f.maximum) if f.maximum is not None else lo_f + 500.0
    if f.minimum is None and f.maximum is not None:
        lo_f = hi_f - 500.0
    value = round(rng.uniform(lo_f, hi_f), 2)
    return min(max(value, lo_f), hi_f)


def datetime_value(rng: random.Random, f: Field) -> str:
    lo = dt.datetime.strptime(f.after or DATETIME_MIN, _FMT)
    hi = dt.datetime.strptime(f.before or DATETIME_MAX, _FMT)
    span = int((hi - lo).total_seconds())
    return (lo + dt.timedelta(seconds=rng.randint(0, span))).strftime(_FMT)


def scalar_value(rng: random.Random, state: State, f: Field) -> Any:
    """A valid non-null value for a non-reference field."""
    if f.kind == "string":
        return string_value(rng, f)
    if f.kind in ("integer", "float"):
        return number_value(rng, f)
    if f.kind == "boolean":
        return rng.random() < 0.5
    if f.kind == "enum":
        enum = state.enum(f.enum or "")
        assert enum is not None
        return rng.choice(enum.values)
    if f.kind == "datetime":
        return datetime_value(rng, f)
    raise ValueError(f"{f.kind} has no scalar value")


def other_value(rng: random.Random, state: State, f: Field, current: Any) -> Any | None:
    """A valid value different from `current`, or None when the field allows only one value."""
    for _ in range(20):
        v = scalar_value(rng, state, f)
        if v != current:
            return v
    return None


def wrong_type_values(f: Field) -> list[Any]:
    """JSON values of the wrong type for the field (each must be rejected with 400 or 422)."""
    table: dict[str, list[Any]] = {
        "string": [12345, True],
        "integer": ["17", 2.5, True],
        "float": ["1.5", False],
        "boolean": ["true", 1],
        "enum": [7],
        "datetime": [20240315, "2024-03-15T10:00:00"],
        "ref": [123],
        "ref_list": ["not-a-list", [123]],
    }
    return table[f.kind]


def scalar_body(rng: random.Random, state: State, entity: Entity, obj_id: str, full: bool = True) -> dict[str, Any]:
    """A valid POST body: every scalar field when `full`, else only the required ones without defaults.

    Reference fields are left out (they are optional); callers add them once targets exist.
    """
    body: dict[str, Any] = {"id": obj_id}
    for f in entity.fields:
        if f.kind in ("ref", "ref_list"):
            continue
        if full or (f.required and not f.has_default):
            body[f.name] = scalar_value(rng, state, f)
    return body


def stored(state: State, entity: Entity, body: dict[str, Any]) -> dict[str, Any]:
    """What the server must store for a valid POST body: defaults, nulls and `[]` filled in."""
    out = {"id": body["id"]}
    for f in entity.fields:
        if f.name in body:
            out[f.name] = body[f.name]
        elif f.has_default:
            out[f.name] = f.default
        else:
            out[f.name] = [] if f.kind == "ref_list" else None
    return out
