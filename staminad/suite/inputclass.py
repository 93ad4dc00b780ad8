"""An input class and what it is built from: its context (`Ctx`), the makers of its tests and the conditions
under which it applies; `classes` lists them in the catalogue."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from staminad.bench.schema import Entity, Field, State
from staminad.suite.data import datetime_value, scalar_body
from staminad.suite.draws import ident
from staminad.suite.model import OK_OR_EMPTY, REJECTED, Equals, IsInteger, ListIds, Step, req
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
    category: str = "validation"  # the failure category of the test `make` writes

    def applies(self, state: State, entity: Entity, field: Field | None) -> bool:
        if field is None:
            return ENTITY in self.kinds and self.when(state, entity, None)
        return field.kind in self.kinds and self.when(state, entity, field)


def _always(state: State, entity: Entity, f: Field | None) -> bool:
    return True


def field_of(ctx: Ctx) -> Field:
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


def stored_back(ctx: Ctx, value: Any, why: str, integer: bool = False, n: int = 0) -> list[Step]:
    """POST the value, and read it back from the answer and from a GET, unchanged."""
    f, ep = field_of(ctx), ctx.entity.endpoint
    oid = f"{ctx.without['id']}-{n}" if n else ctx.without["id"]
    checks: tuple[Any, ...] = (Equals((f.name,), value),) + ((IsInteger((f.name,)),) if integer else ())
    return [
        *ctx.fix,
        req("POST", f"/{ep}", {**ctx.without, "id": oid, f.name: value}, checks=checks, why=why),
        req("GET", f"/{ep}/{oid}", checks=checks, why=f"{f.name} must read back exactly as sent"),
    ]


def _rejected(ctx: Ctx, values: list[Any], why: str) -> list[Step]:
    f, ep = field_of(ctx), ctx.entity.endpoint
    return [req("POST", f"/{ep}", {**ctx.without, f.name: v}, expect=REJECTED, why=f"{why}: {v!r}") for v in values]


def text(name: str) -> Maker:
    def make(ctx: Ctx) -> list[Step]:
        value = _sized(field_of(ctx), *_TEXTS[name])
        assert value is not None
        return stored_back(ctx, value, f"a string is any JSON string: {value!r} is stored as sent")

    return make


def text_fits(name: str) -> When:
    return lambda s, e, f: f is not None and _sized(f, *_TEXTS[name]) is not None


def whole(f: Field) -> int | None:
    lo = math.ceil(f.minimum) if f.minimum is not None else None
    hi = math.floor(f.maximum) if f.maximum is not None else None
    v = (lo + 1 if hi is None or lo + 1 <= hi else lo) if lo is not None else (hi - 1 if hi is not None else 3)
    return v if (hi is None or v <= hi) and (lo is None or v >= lo) else None


def fine(f: Field) -> float | None:
    """A number with nine significant decimals inside the bounds: rounding or truncating it shows."""
    lo = f.minimum if f.minimum is not None else 0
    span = (f.maximum - lo) if f.maximum is not None else 100
    v = round(lo + span * 0.123456789, 9) if span > 0 else None
    return v if v is not None and v != round(v, 2) and (f.maximum is None or v <= f.maximum) else None


def large(f: Field) -> list[int | float]:
    big = LARGE_INTEGER if f.kind == "integer" else LARGE_FLOAT
    return ([big] if f.maximum is None else []) + ([-big] if f.minimum is None else [])


def make_large(ctx: Ctx) -> list[Step]:
    f = field_of(ctx)
    steps: list[Step] = []
    for i, v in enumerate(large(f)):
        steps += stored_back(ctx, v, f"{f.name} has no bound on this side: {v!r} is valid", f.kind == "integer", i)
    return steps


def make_integral(ctx: Ctx) -> list[Step]:
    v = whole(field_of(ctx))
    assert v is not None
    return stored_back(ctx, float(v), f"a float field accepts {float(v)!r}")


def make_fine(ctx: Ctx) -> list[Step]:
    v = fine(field_of(ctx))
    assert v is not None
    return stored_back(ctx, v, f"{v!r} is stored without rounding")


def make_empty_string(ctx: Ctx) -> list[Step]:
    if field_of(ctx).min_length:
        return _rejected(ctx, [""], "the empty string is shorter than the minimum length")
    return stored_back(ctx, "", "the empty string is a string like any other")


def padded(ctx: Ctx) -> list[Step]:
    f = field_of(ctx)
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


def make_valid_datetime(ctx: Ctx) -> list[Step]:
    f = field_of(ctx)
    v = _leap_ok(f) or datetime_value(ctx.rng, f)
    return stored_back(ctx, v, f"{v!r} is a valid datetime and reads back in the same form")


def make_time_zone(ctx: Ctx) -> list[Step]:
    v = datetime_value(ctx.rng, field_of(ctx))
    return _rejected(ctx, [f"{v}Z", f"{v}+00:00"], "a datetime has no time zone")


def victim_id(ctx: Ctx) -> str:
    value = ctx.base[field_of(ctx).name]
    return str(value[0] if isinstance(value, list) else value)


def _wrap(ctx: Ctx, ids: list[str]) -> Any:
    return ids if field_of(ctx).kind == "ref_list" else ids[0]


def target_of(ctx: Ctx) -> Entity:
    t = ctx.state.entity(field_of(ctx).target or "")
    assert t is not None
    return t


def make_deleted(ctx: Ctx) -> list[Step]:
    victim, t = victim_id(ctx), target_of(ctx)
    return [
        *ctx.fix,
        req("DELETE", f"/{t.endpoint}/{victim}", expect=OK_OR_EMPTY, why=f"delete the {t.name} {victim}"),
        *_rejected(ctx, [_wrap(ctx, [victim])], f"{field_of(ctx).name} must reject the id of a deleted {t.name}"),
    ]


def make_case(ctx: Ctx) -> list[Step]:
    victim = victim_id(ctx)
    why = f"ids are case-sensitive: {victim.upper()!r} names no {target_of(ctx).name}"
    return [*ctx.fix, *_rejected(ctx, [_wrap(ctx, [victim.upper()])], why)]


def _targets(ctx: Ctx, n: int) -> tuple[list[Step], list[str]]:
    t = target_of(ctx)
    bodies = [target_body(ctx.rng, ctx.state, t) for _ in range(n)]
    return [req("POST", f"/{t.endpoint}", b, why=f"create a {t.name} to reference") for b in bodies], [
        b["id"] for b in bodies
    ]


def list_of(n: int) -> Maker:
    def make(ctx: Ctx) -> list[Step]:
        made, ids = _targets(ctx, n)
        ctx2 = Ctx(ctx.state, ctx.rng, ctx.entity, ctx.field, ctx.without, ctx.base, made)
        return stored_back(ctx2, ids, f"{field_of(ctx).name} holds the {n} ids sent, in order")

    return make


def other_entity(state: State, e: Entity, f: Field | None) -> bool:
    return f is not None and any(x.name != f.target for x in state.entities)


def make_id_case(ctx: Ctx) -> list[Step]:
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


def make_list_sizes(ctx: Ctx) -> list[Step]:
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


def entry(
    rule: str,
    name: str,
    kinds: tuple[str, ...],
    text: str,
    when: When = _always,
    make: Maker | None = None,
    category: str = "validation",
) -> InputClass:
    return InputClass(rule=rule, name=name, kinds=kinds, text=text, when=when, make=make, category=category)


def has(attr: str) -> When:
    return lambda s, e, f: f is not None and bool(getattr(f, attr))


def bounded(s: State, e: Entity, f: Field | None) -> bool:
    return f is not None and (f.minimum is not None or f.maximum is not None or bool(f.after) or bool(f.before))


def has_max_length(s: State, e: Entity, f: Field | None) -> bool:
    return f is not None and f.max_length is not None


def cased(s: State, e: Entity, f: Field | None) -> bool:
    enum = s.enum(f.enum or "") if f else None
    return enum is not None and any(v.upper() not in enum.values for v in enum.values)


NUMERIC = ("integer", "float")
REFERENCES = ("ref", "ref_list")
STRING = ("string",)
