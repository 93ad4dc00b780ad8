"""The held-out servers (see the package docstring) and when a state can show each one's mistake."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from staminad.bench.parts import set_before
from staminad.bench.schema import (
    Compare,
    Compute,
    FieldOperand,
    ForEach,
    Increment,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
)
from staminad.reference import effectcases as fx
from staminad.reference import exercised as ex
from staminad.reference.server import App


class NullEqualsFalse(App):
    """`this.flag == false` written as `not this.flag`: a null flag passes."""

    def _cmp(self, a: Any, op: str, b: Any) -> bool:
        if op == "==" and b is False:
            return not a
        return super()._cmp(a, op, b)


class SumPropagatesNull(App):
    """`sum(this.items.f)` with a null among the values is null (the guard then fails)."""

    def _operand(self, entity: dict[str, Any], obj: dict[str, Any], op: dict[str, Any]) -> Any:
        if op["type"] == "sum":
            table = self._target(entity, op["list_field"])[1]
            vals = [table[i].get(op["field"]) for i in obj.get(op["list_field"]) or [] if i in table]
            return None if None in vals else sum(vals)
        return super()._operand(entity, obj, op)


class QuantifierFirstItem(App):
    """`any of` / `all of` look at the first referenced entity only."""

    def _holds(self, entity: dict[str, Any], obj: dict[str, Any], c: dict[str, Any]) -> bool:
        if c["type"] == "quantified" and len(obj.get(c["list_field"]) or []) > 1:
            return super()._holds(entity, {**obj, c["list_field"]: obj[c["list_field"]][:1]}, c)
        return super()._holds(entity, obj, c)


class DecreaseStopsAtZero(App):
    """A decrease never takes a value below 0 (`max(0, x - n)`), bound or no bound."""

    def _simple(self, entity: dict[str, Any], obj: dict[str, Any], x: dict[str, Any]) -> None:
        before = obj.get(x["field"])
        super()._simple(entity, obj, x)
        if x["type"] == "increment" and x["amount"] < 0 and isinstance(before, int | float) and before >= 0:
            obj[x["field"]] = max(obj[x["field"]], 0)


class SetSkipsFalsy(App):
    """`set this.x to V` does nothing when V is null, false, 0 or "" (`if value: obj[f] = value`)."""

    def _simple(self, entity: dict[str, Any], obj: dict[str, Any], x: dict[str, Any]) -> None:
        if x["type"] == "set" and not x.get("value"):
            return
        super()._simple(entity, obj, x)


class ActionAnswers201(App):
    """A successful action answers 201, the POST default of many frameworks."""

    def _act(self, entity: dict[str, Any], action: dict[str, Any], oid: str) -> tuple[int, Any]:
        status, body = super()._act(entity, action, oid)
        return (201 if status == 200 else status), body


class MaxStartsAtZero(App):
    """min and max start from 0 (`best = 0; for v in values: ...`), so 0 wins over all-positive or all-negative data."""

    def _analytics(self, parts: list[str]) -> tuple[int, Any]:
        status, body = super()._analytics(parts)
        op = parts[-1]
        if status == 200 and op in ("min", "max") and body["result"] is not None:
            body = {"result": min(body["result"], 0) if op == "min" else max(body["result"], 0)}
        return status, body


class AvgOverAllEntities(App):
    """avg divides by the number of entities, nulls included."""

    def _analytics(self, parts: list[str]) -> tuple[int, Any]:
        status, body = super()._analytics(parts)
        if status == 200 and parts[-1] == "avg" and body["result"] is not None:
            a = self.analytics[(parts[0], parts[1], "avg")]
            objs = list(self.data[a["entity"]].values())
            body = {"result": sum(o[a["field"]] for o in objs if o.get(a["field"]) is not None) / len(objs)}
        return status, body


def _guards(s: State, ok: Callable[[Any, Any], bool]) -> bool:
    return ex.any_guard(s, lambda st, e, c: ok(e, c))


def _effects(ok: Callable[[State, Any, Any, Any], bool]) -> Callable[[State], bool]:
    return lambda s: any(ex.others_hold(s, e, a) and any(ok(s, e, a, x) for x in a.effects) for a, e in ex.actions(s))


def _null_false(e: Any, c: Any) -> bool:
    return (
        isinstance(c, Compare)
        and isinstance(c.left, FieldOperand)
        and c.op == "=="
        and c.value is False
        and ex.nullable(e.field(c.left.field))
    )


def _sum_with_null(s: State) -> bool:
    def ok(e: Any, c: Any) -> bool:
        if not (isinstance(c, Compare) and isinstance(c.left, SumOperand)):
            return False
        t = ex.link_target(s, e, c.left.list_field)
        return ex.nullable(t.field(c.left.field) if t else None)

    return ex.any_guard(s, lambda st, e, c: ok(e, c) and ex.can_be(st, e, c, True))


def _quantified(s: State) -> bool:
    def ok(st: State, e: Any, c: Any) -> bool:
        if not isinstance(c, Quantified):
            return False
        t = ex.link_target(st, e, c.list_field)
        g = t.field(c.field) if t else None
        vals = ex.values(st, g, c.value) if g else []
        good = any(ex.compare(v, c.op, c.value) for v in vals)
        bad = any(not ex.compare(v, c.op, c.value) for v in vals)
        return good and bad

    return ex.any_guard(s, ok)


def _own_starts(s: State, a: Any, f: Any, x: Any) -> list[Any]:
    """Values the acted-on entity's field `f` can hold when effect `x` runs: one an earlier `set` fixed,
    else valid values the guards allow (unknown after an earlier increase or computation of it)."""
    earlier = a.effects[: a.effects.index(x)]
    preset = set_before(a, x)
    if f.name in preset:
        return [preset[f.name]]
    if any(isinstance(y, Increment | Compute) and y.field == f.name for y in earlier):
        return []
    starts = [v for v in fx._probes(s, a, f) if fx._assignment_ok(a, {f.name: v})]
    return [*starts, None] if ex.nullable(f) and fx._assignment_ok(a, {f.name: None}) else starts


def _linked_starts(s: State, a: Any, t: Any, g: Any, link: str, around: Any = None) -> list[Any]:
    """Values a linked entity's field can hold: every `all of` guard on the list allows them."""
    alls = [
        c
        for c in a.conditions
        if isinstance(c, Quantified) and c.list_field == link and c.quantifier == "all" and c.field == g.name
    ]
    lits = [around, *(c.value for c in alls)]
    vals = list(dict.fromkeys(v for lit in lits for v in ex.values(s, g, lit)))
    vals += [None] if ex.nullable(g) and not alls else []
    return [v for v in vals if all(ex.compare(v, c.op, c.value) for c in alls)]


def _reached_target(s: State, e: Any, a: Any, x: Any) -> tuple[Any, str] | None:
    """(entity, link) an on-reference or for-each effect can reach while the guards hold."""
    link = x.ref_field if isinstance(x, OnReference) else x.list_field
    t = ex.link_target(s, e, link)
    if t is None:
        return None
    if isinstance(x, OnReference):
        return (t, link) if fx._free_link(a, link) else None
    return (t, link) if fx._listed_nonempty(s, e, a, link) else None


def _decrease(s: State, e: Any, a: Any, x: Any) -> bool:
    """A decrease can start at a value >= 0 and end below 0 (where the bug stops it at 0)."""
    inner = x.effect if isinstance(x, OnReference | ForEach) else x
    if not isinstance(inner, Increment) or inner.amount >= 0 or fx._overwritten(a, e, x, False):
        return False
    if isinstance(x, OnReference | ForEach):
        reached = _reached_target(s, e, a, x)
        f = reached[0].field(inner.field) if reached else None
        starts = _linked_starts(s, a, reached[0], f, reached[1], -inner.amount) if reached and f else []
    else:
        f = e.field(inner.field)
        starts = _own_starts(s, a, f, x) if f is not None else []
    return any(isinstance(v, int | float) and v >= 0 and v + inner.amount < 0 for v in starts)


def _set_falsy(s: State, e: Any, a: Any, x: Any) -> bool:
    """A set to null, false, 0 or "" of a field that can hold another value when it runs."""
    inner = x.effect if isinstance(x, OnReference | ForEach) else x
    if not isinstance(inner, SetValue) or inner.value or fx._overwritten(a, e, x, False):
        return False
    if isinstance(x, OnReference | ForEach):
        reached = _reached_target(s, e, a, x)
        f = reached[0].field(inner.field) if reached else None
        starts = _linked_starts(s, a, reached[0], f, reached[1], inner.value) if reached and f else []
    else:
        f = e.field(inner.field)
        starts = _own_starts(s, a, f, x) if f is not None else []
    return any(v != inner.value for v in starts)


def _min_max_zero(s: State) -> bool:
    for an in s.analytics:
        e = s.entity(an.entity)
        f = e.field(an.field or "") if e else None
        if f is None:
            continue
        vs = [v for v in ex.values(s, f) if isinstance(v, int | float)]
        if (an.op == "min" and any(v > 0 for v in vs)) or (an.op == "max" and any(v < 0 for v in vs)):
            return True
    return False


def _avg_null(s: State) -> bool:
    return any(
        an.op == "avg" and (e := s.entity(an.entity)) is not None and ex.nullable(e.field(an.field or ""))
        for an in s.analytics
    )


SERVERS: dict[str, tuple[str, type[App], Callable[[State], bool]]] = {
    "null-equals-false": ("guards", NullEqualsFalse, lambda s: _guards(s, _null_false)),
    "sum-propagates-null": ("guards", SumPropagatesNull, _sum_with_null),
    "quantifier-first-item": ("guards", QuantifierFirstItem, _quantified),
    "decrease-stops-at-zero": ("effects", DecreaseStopsAtZero, _effects(_decrease)),
    "set-skips-falsy": ("effects", SetSkipsFalsy, _effects(_set_falsy)),
    "action-answers-201": ("actions", ActionAnswers201, ex.action_can_succeed),
    "min-max-start-at-zero": ("analytics", MaxStartsAtZero, _min_max_zero),
    "avg-over-all-entities": ("analytics", AvgOverAllEntities, _avg_null),
}
