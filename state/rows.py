"""Rows the read-only queries (`state.browse`) read back from the store, decoded into Structs: the one decode, and
the one-line error for a stored value that does not fit its field.

A value outside its field's type (a hand-edited or damaged row) is a `DamagedRow` naming the row, the field and the
value; a word outside a closed set is said as `protocol.kinds.UnknownWord` says it, with the words it may be.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec

from protocol.errors import ExpectedError
from protocol.kinds import UnknownWord, known_categories


class DamagedRow(ExpectedError):
    """A stored row with a value outside its field's type: names the row, the field and the value."""


R = TypeVar("R", bound=msgspec.Struct)


def decode_row(cls: type[R], row: Mapping[str, Any], what: str) -> R:
    """`row` as `cls`; a value that does not fit its field is a `DamagedRow` naming `what` (the row) and the value.
    Columns `cls` has no field for are left out (`SELECT *` of a newer column set)."""
    fields = dict(row)
    try:
        if "categories" in fields:  # stored comma-joined (NULL: none)
            fields["categories"] = known_categories(fields["categories"])
        return msgspec.convert(fields, cls)
    except UnknownWord as exc:
        raise DamagedRow(f"{what} in the store cannot be read: {exc}") from None
    except msgspec.ValidationError as exc:
        raise DamagedRow(f"{what} in the store cannot be read: {_why(cls, row, exc)}") from None


def _why(cls: type[msgspec.Struct], row: Mapping[str, Any], exc: msgspec.ValidationError) -> str:
    """The one field that did not fit, said as `UnknownWord` says it for a closed set, else as msgspec says it."""
    text = str(exc)
    marker = " - at `$."
    if marker not in text:
        return text
    problem, _, rest = text.partition(marker)
    field = rest.split("`", 1)[0].split(".", 1)[0].split("[", 1)[0]
    words = _words(cls, field)
    if words:
        return str(UnknownWord(field.replace("_", " "), row.get(field), words))
    return f"{field} {row.get(field)!r}: {problem[0].lower()}{problem[1:]}"


def _words(cls: type[msgspec.Struct], field: str) -> tuple[str, ...]:
    """The words of the closed set (a `Literal`, or a union of them) of `cls`'s `field` in the order they are
    declared, or () for a field of another type."""
    return _literal_words(get_type_hints(cls).get(field))


def _literal_words(t: object) -> tuple[str, ...]:
    if get_origin(t) is Literal:
        return tuple(str(word) for word in get_args(t))
    if get_origin(t) in (Union, types.UnionType):
        return tuple(word for member in get_args(t) for word in _literal_words(member))
    return ()


__all__ = ["DamagedRow", "decode_row"]
