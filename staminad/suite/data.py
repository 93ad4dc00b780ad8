"""Test data: valid values inside a field's bounds, and values each validation rule must reject.

All draws come from the caller's seeded `random.Random`, so a suite is reproducible. Floats carry
two decimals, so sums and averages exercise real float arithmetic (an average is rarely round).
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import string
from typing import Any

from staminad.bench.datetimes import parse_datetime
from staminad.bench.schema import DATETIME_MAX, DATETIME_MIN, Entity, Field, State
from staminad.suite.model import Check, Equals

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
    lo = parse_datetime(f.after or DATETIME_MIN)
    hi = parse_datetime(f.before or DATETIME_MAX)
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


def object_value(f: Field, base: dict[str, Any]) -> dict[str, Any]:
    """A JSON object for a field that holds no objects: for a reference, the shape an embedded record would have."""
    if f.kind in ("ref", "ref_list"):
        current = base.get(f.name)
        ident = current[0] if isinstance(current, list) and current else current
        return {"id": ident if isinstance(ident, str) else "x"}
    return {"value": 1}


_WIDE = "äöüéßñøå"  # two UTF-8 bytes each: a length counted in bytes shows


def wide_string(n: int) -> str:
    """`n` characters that are not ASCII, for length bounds (which count characters, not bytes)."""
    return "".join(_WIDE[i % len(_WIDE)] for i in range(n))


def invalid_value(f: Field) -> Any:
    """A value the field must reject: of the right type but breaking a constraint where it has one."""
    if f.kind == "enum":
        return "not_a_listed_value"
    if f.kind in ("integer", "float") and (f.minimum is not None or f.maximum is not None):
        return f.minimum - 1 if f.minimum is not None else f.maximum + 1  # type: ignore[operator]
    if f.kind == "string" and f.max_length is not None:
        return "x" * (f.max_length + 1)
    if f.kind == "string" and f.min_length:
        return "m" * (f.min_length - 1)
    if f.kind == "datetime":
        return "2023-02-30 10:00:00"
    if f.kind == "ref":
        return "no-such-id"
    if f.kind == "ref_list":
        return ["no-such-id"]
    return wrong_type_values(f)[0]


def constrained(f: Field) -> bool:
    """The field rejects some values of its own JSON type (so a PATCH checking only types shows)."""
    return f.kind not in ("boolean",) and invalid_value(f) != wrong_type_values(f)[0]


def _window(f: Field) -> tuple[str, str]:
    return f.after or "0000-01-01 00:00:00", f.before or "9999-12-31 23:59:59"


def datetime_probe(f: Field, kind: str) -> str | None:
    """An invalid datetime inside the field's bounds (compared as strings), so only its form can reject it.

    `kind` is "leap" (Feb 29 of a non-leap year), "hour" (24:00:00), "iso" (a `T` separator) or
    "short" (no seconds).
    """
    lo, hi = _window(f)
    if kind == "leap":
        years = itertools.chain((2023,), range(max(int(lo[:4]), 1), min(int(hi[:4]), 9999) + 1))
        # Lazily: the first that fits is taken, and the window may span thousands of years.
        cands = (f"{y:04d}-02-29 12:00:00" for y in years if y % 4 or (y % 100 == 0 and y % 400))
    else:
        days = [lo[:10]] if f.after else []
        if f.before and hi[:10] > "0001-01-01":
            days.append((dt.datetime.strptime(hi[:10], "%Y-%m-%d") - dt.timedelta(days=1)).strftime("%Y-%m-%d"))
        days.append("2024-04-10")
        form = {"hour": "{} 24:00:00", "iso": "{}T10:00:00", "short": "{} 23:59"}[kind]
        cands = (form.format(d) for d in days)
    return next((c for c in cands if lo <= c <= hi), None)


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


def stored_checks(obj: dict[str, Any]) -> tuple[Check, ...]:
    """Every key of a stored entity; a list (only list-of-references fields hold one) cites the rule of such
    fields: a list answered as null breaks that rule whichever test reads it back."""
    return tuple(Equals((k,), v, "reference-list" if isinstance(v, list) else "") for k, v in obj.items())
