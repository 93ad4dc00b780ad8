"""What counts as a valid value for a field: JSON types, enum membership, bounds, datetimes.

The transition uses it to keep defaults and literals legal; the suite uses it to build valid and
invalid payloads. The rules match the agent README word for word in meaning (rule ids `types`,
`enum`, `range`, `length`, `datetime`).
"""

from __future__ import annotations

import datetime as dt
import re

from staminad.bench.datetimes import datetime_text, parse_datetime
from staminad.bench.schema import Field, Scalar, State

DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


def is_valid_datetime(value: object) -> bool:
    """`YYYY-MM-DD hh:mm:ss` with a real calendar date and time."""
    if not isinstance(value, str) or not DATETIME_RE.match(value):
        return False
    try:
        dt.datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return False
    return True


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def scalar_fits(state: State, field: Field, value: Scalar | None) -> bool:
    """Whether a non-reference value satisfies the field's type and constraints (null excluded)."""
    if value is None:
        return False
    kind = field.kind
    if kind == "string":
        if not isinstance(value, str):
            return False
        if field.min_length is not None and len(value) < field.min_length:
            return False
        return field.max_length is None or len(value) <= field.max_length
    if kind == "integer" or kind == "float":
        ok = is_int(value) if kind == "integer" else is_number(value)
        if not ok:
            return False
        assert isinstance(value, int | float)
        if field.minimum is not None and value < field.minimum:
            return False
        return field.maximum is None or value <= field.maximum
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "enum":
        enum = state.enum(field.enum or "")
        return isinstance(value, str) and enum is not None and value in enum.values
    if kind == "datetime":
        if not is_valid_datetime(value):
            return False
        assert isinstance(value, str)
        if field.after is not None and value < field.after:
            return False
        return field.before is None or value <= field.before
    return False


def type_fits(state: State, field: Field, value: Scalar | None) -> bool:
    """Whether a literal has the field's JSON type, ignoring bounds (effects bypass bounds)."""
    if value is None:
        return False
    kind = field.kind
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return is_int(value)
    if kind == "float":
        return is_number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "enum":
        enum = state.enum(field.enum or "")
        return isinstance(value, str) and enum is not None and value in enum.values
    if kind == "datetime":
        return is_valid_datetime(value)
    return False


def _around_bounds(f: Field) -> list[Scalar]:
    """Values at and one step outside each bound of `f` (a character or a second for strings and datetimes)."""
    if f.kind in ("integer", "float"):
        step = 1 if f.kind == "integer" else 0.5
        return [v + d for v in (f.minimum, f.maximum) if v is not None for d in (-step, 0, step)]
    if f.kind == "string":
        lengths = [n + d for n in (f.min_length, f.max_length) if n is not None for d in (-1, 0, 1)]
        return ["s" * n for n in lengths if n >= 0]
    out: list[Scalar] = []
    for bound in (f.after, f.before):
        if bound is None:
            continue
        t = parse_datetime(bound)
        for d in (-1, 0, 1):
            try:
                u = t + dt.timedelta(seconds=d)
            except OverflowError:  # one second past 9999-12-31 23:59:59
                continue
            out.append(datetime_text(u))
    return out


def rebound_probes(state: State, old: Field, new: Field) -> tuple[Scalar | None, Scalar | None]:
    """After a change of bounds from `old` to `new`: a value it made valid, and one it made invalid (None where
    there is none), each at or next to one of the bounds."""
    values = list(dict.fromkeys(_around_bounds(new) + _around_bounds(old)))
    made_valid = [v for v in values if scalar_fits(state, new, v) and not scalar_fits(state, old, v)]
    made_invalid = [v for v in values if scalar_fits(state, old, v) and not scalar_fits(state, new, v)]
    return (made_valid[0] if made_valid else None), (made_invalid[0] if made_invalid else None)
