"""Reading a request: its JSON body, its id and each field's value checked against the field's type and bounds.

`Validation` is the part of `App` that decides whether a value may be stored (and what is stored), with the
mutants' wrong readings of types, bounds, dates and ids switched on by name; `Reject` is the one way a
request is refused.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

_DT = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")
# Ids need no percent-encoding in a path: RFC 3986 unreserved characters only, at least one.
_ID = re.compile(r"^[A-Za-z0-9._~-]+$")


class Reject(Exception):
    """A request refused with `status`; the message becomes the answer's `error`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def is_int(v: Any) -> bool:
    """A JSON integer (a bool is not one, though Python says it is an int)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v: Any) -> bool:
    """A JSON number, integer or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class Validation:
    """The checks of bodies, ids and field values; `App` supplies the state they read."""

    bugs: set[str]
    enums: dict[str, list[str]]
    data: dict[str, dict[str, dict[str, Any]]]

    def _json(self, raw: bytes) -> Any:
        def no_constants(name: str) -> Any:
            raise ValueError(f"{name} is not valid JSON")

        constants = None if "non-finite-accepted" in self.bugs else no_constants  # json.loads' default takes NaN
        if "malformed-json-500" in self.bugs:  # parses without a try: the parser's error escapes as a 500
            body = json.loads(raw.decode("utf-8") or "null", parse_constant=constants)
        else:
            try:
                body = json.loads(raw.decode("utf-8") or "null", parse_constant=constants)
            except (ValueError, UnicodeDecodeError):
                raise Reject(400, "body is not valid JSON") from None
        if not isinstance(body, dict) and "non-object-body-500" not in self.bugs:  # the mutant calls .get on it
            raise Reject(400, "body must be a JSON object")
        return body

    def _valid_date(self, v: Any) -> bool:
        if "iso-format-accepted" in self.bugs and isinstance(v, str):
            try:  # the mutant parses with fromisoformat, which also takes `T`, no seconds, offsets...
                dt.datetime.fromisoformat(v)
            except ValueError:
                return False
            return True
        if not isinstance(v, str) or ("strptime-dates" not in self.bugs and not _DT.match(v)):
            return False
        if "invalid-calendar" in self.bugs:
            return True
        if "leap-day-always" in self.bugs or "hour-24" in self.bugs:
            return _hand_checked_date(v, "leap-day-always" in self.bugs, "hour-24" in self.bugs)
        try:
            dt.datetime.strptime(v, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return False
        return True

    def _in_range(self, v: Any, lo: Any, hi: Any) -> bool:
        if "exclusive-bounds" in self.bugs:
            return (lo is None or v > lo) and (hi is None or v < hi)
        if "zero-bound-ignored" in self.bugs:  # `if minimum and v < minimum`: a bound of 0 is falsy
            return (not lo or v >= lo) and (not hi or v <= hi)
        return (lo is None or v >= lo) and (hi is None or v <= hi)

    def _check(self, f: dict[str, Any], v: Any) -> Any:  # noqa: C901 - one branch per rule, each with its own one-line message
        """Validate one non-null value for field `f`; returns the value to store."""
        kind, name = f["kind"], f["name"]
        bad = Reject(400, f"{name}: invalid value {v!r}")
        if kind == "string":
            if not isinstance(v, str):
                raise bad
            n = len(v.encode("utf-8")) if "length-bytes" in self.bugs else len(v)
            if not (
                (f.get("min_length") is None or n >= f["min_length"])
                and (f.get("max_length") is None or n <= f["max_length"])
            ):
                raise bad
        elif kind in ("integer", "float"):
            v = self._number(kind, v)
            if v is None:
                raise bad
            if not self._in_range(v, f.get("minimum"), f.get("maximum")):
                raise bad
        elif kind == "boolean":
            if not isinstance(v, bool):
                raise bad
        elif kind == "enum":
            values = self.enums.get(f.get("enum", ""), [])
            if "enum-any-string" in self.bugs and isinstance(v, str):
                return v
            if "case-insensitive-enums" in self.bugs and isinstance(v, str):
                match = [x for x in values if x.lower() == v.lower()]
                if match:
                    return match[0]
            if not isinstance(v, str) or v not in values:
                raise bad
        elif kind == "datetime":
            if not self._valid_date(v) or not self._in_range(v, f.get("after"), f.get("before")):
                raise bad
        elif kind == "ref":
            if not isinstance(v, str):  # before the lookup: a list or object is no key of the store
                raise bad
            if "unchecked-reference" not in self.bugs and v not in self.data.get(f["target"], {}):
                raise bad
        elif kind == "ref_list":
            table = self.data.get(f["target"], {})
            unchecked = "unchecked-reference-list" in self.bugs
            if not isinstance(v, list) or not all(isinstance(i, str) and (unchecked or i in table) for i in v):
                raise bad
            return list(dict.fromkeys(v)) if "ref-list-deduped" in self.bugs else list(v)
        return v

    def _number(self, kind: str, v: Any) -> Any:
        """The number to store for an integer or float field, or None when `v` is not one."""
        if "numeric-strings" in self.bugs and isinstance(v, str):
            try:  # the mutant coerces like int(...)/float(...) would
                v = int(v) if kind == "integer" else float(v)
            except ValueError:
                return None
        if "bool-is-number" in self.bugs and isinstance(v, bool):
            return v  # isinstance(True, int) holds in Python
        if kind == "integer":
            if "integer-accepts-fraction" in self.bugs and is_num(v):
                return v
            return v if is_int(v) else None
        if "integral-float-rejected" in self.bugs:
            return v if isinstance(v, float) else None
        return v if is_num(v) else None

    def _value(self, f: dict[str, Any], v: Any) -> Any:
        if v is None:
            if "null-means-default" in self.bugs and f.get("has_default", False):
                return f.get("default")  # `body.get(name) or default`: explicit null treated as omitted
            if "ref-list-null-accepted" in self.bugs and f["kind"] == "ref_list":
                return []
            if f.get("nullable", False) or ("accept-null" in self.bugs and f["kind"] != "ref_list"):
                return None
            raise Reject(400, f"{f['name']} must not be null")
        try:
            return self._check(f, v)
        except Reject:
            if "500-on-wrong-type" in self.bugs and not self._type_ok(f, v):
                raise RuntimeError(f"crashed on {f['name']}") from None
            raise

    @staticmethod
    def _type_ok(f: dict[str, Any], v: Any) -> bool:
        checks: dict[str, Any] = {
            "string": lambda x: isinstance(x, str),
            "integer": is_int,
            "float": is_num,
            "boolean": lambda x: isinstance(x, bool),
            "enum": lambda x: isinstance(x, str),
            "datetime": lambda x: isinstance(x, str),
            "ref": lambda x: isinstance(x, str),
            "ref_list": lambda x: isinstance(x, list) and all(isinstance(i, str) for i in x),
        }
        return bool(checks[f["kind"]](v))

    def _id(self, body: dict[str, Any], table: dict[str, Any]) -> str:
        oid = body.get("id")
        if oid is None and "missing-id-generated" in self.bugs:
            oid = f"gen-{len(table) + 1}"
        if "numeric-id-accepted" in self.bugs and is_num(oid):
            oid = str(oid)
        if not isinstance(oid, str):
            raise Reject(400, "id must be a string chosen by the client")
        if "loose-ids" not in self.bugs and not _ID.match(oid):
            raise Reject(400, "id must be non-empty and use only letters, digits, '-', '_', '.' and '~'")
        return oid


def _hand_checked_date(v: str, leap_always: bool, hour_24: bool) -> bool:
    """A mutant's hand-written calendar check: a fixed month table, or `hour <= 24`."""
    y, mo, d, h, mi, se = (int(x) for x in re.findall(r"\d+", v))
    leap = leap_always or (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0))
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return 1 <= mo <= 12 and 1 <= d <= days[mo - 1] and 0 <= h <= (24 if hour_24 else 23) and mi < 60 and se < 60
