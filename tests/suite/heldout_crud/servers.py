"""Hand-written buggy servers, each breaking one README rule the way an implementation plausibly would.

They are held out from the mutant catalogue (none is a flag of the reference server): each is the
reference `App` with one method rewritten as a hurried implementation would write it. Each comes
with `exercised(state, changes)`: whether the design at a turn lets the bug show at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from staminad.bench.changes import Change
from staminad.bench.schema import Field, State
from staminad.reference.server import App, Reject
from staminad.reference.server.validation import is_int, is_num


class StrictIdCharset(App):
    """[client-id] ids limited to letters, digits and '-' (the README also allows '_', '.' and '~')."""

    def _id(self, body: dict[str, Any], table: dict[str, Any]) -> str:
        oid = body.get("id")
        if not isinstance(oid, str) or not re.fullmatch(r"[A-Za-z0-9-]+", oid):
            raise Reject(400, "bad id")
        return oid


class PatchTypeOnly(App):
    """[update] PATCH checks JSON types but none of the constraints (enum, bounds, lengths, references)."""

    def _update(self, entity: dict[str, Any], obj: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        if "id" in body and body["id"] != obj["id"]:
            raise Reject(400, "id cannot be changed")
        fields = {f["name"]: f for f in entity["fields"]}
        changes = {}
        for k, v in body.items():
            if k in fields:
                if v is not None and not self._type_ok(fields[k], v):
                    raise Reject(400, f"{k}: wrong type")
                if v is None and not fields[k].get("nullable"):
                    raise Reject(400, f"{k}: null")
                changes[k] = v
        obj.update(changes)
        return obj


class PatchAllowsNull(App):
    """[update] PATCH treats null as "clear this field", whether or not the field is nullable."""

    def _update(self, entity: dict[str, Any], obj: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        cleared = {k for k, v in body.items() if v is None}
        rest = {k: v for k, v in body.items() if v is not None}
        obj = super()._update(entity, obj, rest)
        for f in entity["fields"]:
            if f["name"] in cleared:
                obj[f["name"]] = [] if f["kind"] == "ref_list" else None
        return obj


class RefChecksAnyTable(App):
    """[reference] a reference is accepted when the id exists in any collection, not just the target's."""

    def _check(self, f: dict[str, Any], v: Any) -> Any:
        if f["kind"] in ("ref", "ref_list"):
            ids = {i for table in self.data.values() for i in table}
            items = v if f["kind"] == "ref_list" else [v]
            if not isinstance(items, list) or not all(isinstance(i, str) and i in ids for i in items):
                raise Reject(400, f"{f['name']}: unknown reference")
            return list(v) if f["kind"] == "ref_list" else v
        return super()._check(f, v)


class RefLookupBeforeType(App):
    """[types] a reference is looked up before its type is checked: an object (unhashable) crashes it with 500."""

    def _check(self, f: dict[str, Any], v: Any) -> Any:
        if f["kind"] in ("ref", "ref_list"):
            table = self.data.get(f["target"], {})
            items = v if f["kind"] == "ref_list" and isinstance(v, list) else [v]
            if not all(i in table for i in items):  # TypeError on a dict: the server answers 500
                raise Reject(400, f"{f['name']}: unknown reference")
        return super()._check(f, v)


class DatetimeOptionalSeconds(App):
    """[datetime] the format check makes the seconds optional (`hh:mm(:ss)?`)."""

    def _valid_date(self, v: Any) -> bool:
        if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", v):
            return super()._valid_date(v + ":00")
        return super()._valid_date(v)


class FalsyAsMissing(App):
    """[default/required] `if (!body.x)`: a falsy value (0, false, "") counts as an omitted field."""

    def _create(self, entity: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in body.items() if k == "id" or v or v is None}
        return super()._create(entity, kept)


class EmptyStringAsNull(App):
    """[types] `value || null`: an empty string is stored as null."""

    def _value(self, f: dict[str, Any], v: Any) -> Any:
        return None if v == "" and f["kind"] == "string" else super()._value(f, v)


class CascadeFirstReferrerOnly(App):
    """[cascade] the cascade loop stops after the first entity that referred to the deleted one."""

    def _delete(self, entity: dict[str, Any], oid: str) -> None:
        del self.data[entity["name"]][oid]
        for other in self.entities.values():
            for f in other["fields"]:
                if f.get("target") != entity["name"]:
                    continue
                for obj in self.data[other["name"]].values():
                    if f["kind"] == "ref" and obj.get(f["name"]) == oid:
                        obj[f["name"]] = None
                        break
                    if f["kind"] == "ref_list" and oid in (obj.get(f["name"]) or []):
                        obj[f["name"]] = [i for i in obj[f["name"]] if i != oid]
                        break


class PatchIdMismatchIgnored(App):
    """[patch-id] a PATCH with a different id drops the id silently instead of rejecting the request."""

    def _update(self, entity: dict[str, Any], obj: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        return super()._update(entity, obj, {k: v for k, v in body.items() if k != "id"})


class IntegerBoundsTruncated(App):
    """[range] integer bounds compared after `int()` on float bounds; floats compared as integers too."""

    def _in_range(self, v: Any, lo: Any, hi: Any) -> bool:
        if is_num(v) and not is_int(v) and (lo is None or is_num(lo)) and (hi is None or is_num(hi)):
            v = int(v)  # truncates 100.5 to 100, so a float just above an integer maximum passes
        return super()._in_range(v, lo, hi)


def _fields(s: State, pred: Callable[[Field], bool]) -> bool:
    return any(pred(f) for e in s.entities for f in e.fields)


def _constrained(f: Field) -> bool:
    if f.kind == "enum" or f.kind in ("datetime", "ref", "ref_list"):
        return True
    if f.kind in ("integer", "float"):
        return f.minimum is not None or f.maximum is not None
    return f.kind == "string" and (f.max_length is not None or bool(f.min_length))


def _falsy_ok(f: Field) -> bool:
    """A falsy value is valid for the field and is not its default."""
    if f.kind == "boolean":
        v: Any = False
    elif f.kind in ("integer", "float") and (f.minimum or 0) <= 0 <= (f.maximum if f.maximum is not None else 1):
        v = 0
    elif f.kind == "string" and not f.min_length:
        v = ""
    else:
        return False
    return not (f.has_default and f.default == v)


def _late_short(f: Field) -> bool:
    """Some `YYYY-MM-DD hh:mm` string lies inside the datetime bounds."""
    lo, hi = f.after or "0000-01-01 00:00:00", f.before or "9999-12-31 23:59:59"
    return f.kind == "datetime" and (lo[:10] < hi[:10] or lo[11:16] < hi[11:16])


@dataclass(frozen=True)
class Heldout:
    app: type[App]
    exercised: Callable[[State, Sequence[Change]], bool]


HELDOUT: tuple[Heldout, ...] = (
    Heldout(StrictIdCharset, lambda s, c: bool(s.entities)),
    Heldout(PatchTypeOnly, lambda s, c: _fields(s, _constrained)),
    Heldout(PatchAllowsNull, lambda s, c: _fields(s, lambda f: not f.nullable)),
    Heldout(RefChecksAnyTable, lambda s, c: len(s.entities) > 1 and _fields(s, lambda f: f.target is not None)),
    Heldout(RefLookupBeforeType, lambda s, c: _fields(s, lambda f: f.target is not None)),
    Heldout(DatetimeOptionalSeconds, lambda s, c: _fields(s, _late_short)),
    # Also shows when a falsy value of the wrong type (false for a number) is dropped instead of rejected.
    Heldout(
        FalsyAsMissing,
        lambda s, c: _fields(s, lambda f: _falsy_ok(f) or (f.kind != "boolean" and (f.has_default or not f.required))),
    ),
    Heldout(EmptyStringAsNull, lambda s, c: _fields(s, lambda f: f.kind == "string" and not f.min_length)),
    Heldout(CascadeFirstReferrerOnly, lambda s, c: _fields(s, lambda f: f.target is not None)),
    Heldout(PatchIdMismatchIgnored, lambda s, c: bool(s.entities)),
    Heldout(
        IntegerBoundsTruncated,
        lambda s, c: _fields(
            s,
            lambda f: (  # truncating toward zero lets a float past a whole maximum in, or past a minimum of 0 or less
                f.kind == "float"
                and (
                    (f.maximum is not None and float(f.maximum).is_integer())
                    or (f.minimum is not None and float(f.minimum).is_integer() and f.minimum <= 0)
                )
            ),
        ),
    ),
)
