"""Random building blocks shared by p0 and pi_env: fields, enum types, conditions, effects, actions.

Every builder draws only from the `random.Random` it is given and returns parts that already
satisfy the integrity rules, so the samplers rarely have to throw a proposal away. Guards on one
action never mention the same field twice, which keeps them jointly satisfiable and lets the
suite violate each one independently.
"""

from __future__ import annotations

import random
from operator import attrgetter
from typing import Any

from staminad.bench.namerules import FieldRoom
from staminad.bench.naming import Namer
from staminad.bench.schema import (
    NUMERIC_KINDS,
    Action,
    ArithOperand,
    Compare,
    Compute,
    Condition,
    CountOperand,
    Effect,
    Entity,
    EnumType,
    Field,
    FieldOperand,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
)

_KIND_WEIGHTS = {"string": 3, "integer": 2, "float": 2, "boolean": 1, "enum": 2, "datetime": 1}
_DT_RANGES = (("2020-01-01 00:00:00", "2026-12-31 23:59:59"), ("2015-01-01 00:00:00", "2030-12-31 23:59:59"))


def camel_of(snake: str) -> str:
    return "".join(w.capitalize() for w in snake.split("_"))


def enum_type_name(state: State, namer: Namer, field: str, extra: tuple[EnumType, ...] = ()) -> str:
    """The name of a new enum type for `field`, unused by the state's (and `extra`'s) enums and entities."""
    name = attrgetter("name")
    return namer.enum_type_name(field, [*map(name, state.enums), *map(name, extra), *map(name, state.entities)])


def _round(x: float) -> float:
    return round(x, 2)


def scalar_field(  # noqa: C901 - one branch per field type, each a few lines
    rng: random.Random,
    namer: Namer,
    state: State,
    entity: str,
    taken: set[str],
    kind: str,
    extra_enums: tuple[EnumType, ...] = (),
) -> tuple[Field, EnumType | None]:
    """A non-reference field of `kind` with random flags, bounds and default, named as `namerules` allows
    beside the entity's fields `taken` (a new enum type's field takes a name no field of the state has)."""
    required = rng.random() < 0.5
    nullable = rng.random() < 0.4
    new_enum: EnumType | None = None
    kw: dict[str, object] = {}
    default: object = None
    room = FieldRoom(state, taken, (kind, None))
    if kind == "enum":
        name = namer.enum_field_name(rng, room)
        hint, values = namer.enum_values(rng, name, [e.values for e in (*state.enums, *extra_enums)])
        if hint and hint not in room:
            name = hint
        elif hint and namer.mode == "themed":  # keep the values' own word: `primary_grade`, never a `status` of grades
            name = namer.renamed_field(rng, "enum", hint, room) or name
        name = name or namer.field_name(rng, "enum", room)
        new_enum = EnumType(name=enum_type_name(state, namer, name, extra_enums), values=values)
        kw["enum"] = new_enum.name
        if rng.random() < 0.7:
            default = rng.choice(values)
    else:
        name = namer.field_name(rng, kind, room)
        if kind == "string":
            if rng.random() < 0.7:
                kw["max_length"] = rng.choice((20, 50, 100, 255))
            if rng.random() < 0.4:
                kw["min_length"] = rng.randint(1, 5)
            if rng.random() < 0.15:
                default = "n/a"[: int(kw.get("max_length", 3))]  # type: ignore[call-overload]
                if len(str(default)) < int(kw.get("min_length", 0)):  # type: ignore[call-overload]
                    default = None
        elif kind == "integer":
            if rng.random() < 0.6:
                kw["minimum"] = rng.choice((0, 1))
            if rng.random() < 0.5:
                kw["maximum"] = rng.choice((100, 1000, 10000))
            if rng.random() < 0.2:
                default = int(kw.get("minimum", 0))  # type: ignore[call-overload]
        elif kind == "float":
            if rng.random() < 0.5:
                kw["minimum"] = 0.0
            if rng.random() < 0.4:
                kw["maximum"] = rng.choice((5.0, 100.0, 1000.0))
            if rng.random() < 0.2:
                default = float(kw.get("minimum", 0.0))  # type: ignore[arg-type]
        elif kind == "boolean":
            if rng.random() < 0.3:
                default = rng.random() < 0.5
        elif kind == "datetime" and rng.random() < 0.5:
            kw["after"], kw["before"] = rng.choice(_DT_RANGES)
    field = Field(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        required=required,
        nullable=nullable,
        has_default=default is not None,
        default=default,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )
    return field, new_enum


def random_kind(rng: random.Random) -> str:
    kinds = list(_KIND_WEIGHTS)
    return rng.choices(kinds, weights=[_KIND_WEIGHTS[k] for k in kinds])[0]


def reference_field(rng: random.Random, namer: Namer, state: State, target: str, taken: set[str]) -> Field | None:
    """A reference to `target` beside the entity's fields `taken`; None when `namerules` leaves it no name."""
    many = rng.random() < 0.45
    name = namer.ref_field_name(rng, target, many, FieldRoom(state, taken, ("ref_list" if many else "ref", target)))
    if name is None:
        return None
    if many:
        return Field(name=name, kind="ref_list", target=target)
    return Field(name=name, kind="ref", target=target, nullable=True)


def entity_fields(
    rng: random.Random, namer: Namer, state: State, entity: str, n: int, force_enum: bool = False
) -> tuple[tuple[Field, ...], tuple[EnumType, ...]]:
    """`n` scalar fields for a new entity, and the enum types they introduce."""
    fields: list[Field] = []
    enums: list[EnumType] = []
    taken: set[str] = set()
    for i in range(n):
        kind = "enum" if force_enum and i == 0 else random_kind(rng)
        f, en = scalar_field(rng, namer, state, entity, taken, kind, tuple(enums))
        fields.append(f)
        taken.add(f.name)
        if en is not None:
            enums.append(en)
    return tuple(fields), tuple(enums)


def _numeric_literal(rng: random.Random, f: Field) -> int | float:
    lo = f.minimum if f.minimum is not None else 0
    hi = f.maximum if f.maximum is not None else 100
    if f.kind == "integer":
        return rng.randint(int(lo), int(hi))
    return _round(rng.uniform(float(lo), float(hi)))


def _pick_op(rng: random.Random) -> str:
    return rng.choice(("<", "<=", ">", ">=", "==", "!="))


def literal_for(rng: random.Random, state: State, f: Field) -> object | None:
    """A value of the field's type inside its bounds, or None if the kind has no literal."""
    if f.kind in NUMERIC_KINDS:
        return _numeric_literal(rng, f)
    if f.kind == "boolean":
        return rng.random() < 0.5
    if f.kind == "enum":
        en = state.enum(f.enum or "")
        return rng.choice(en.values) if en else None
    if f.kind == "string" and (f.max_length or 20) >= 4 and (f.min_length or 0) <= 4:
        return rng.choice(("done", "open", "vip", "none"))
    return None


def random_condition(
    rng: random.Random, state: State, entity: Entity, avoid: set[str], action_field: str
) -> Condition | None:
    """A guard over fields not in `avoid` (fields other guards of the action already use)."""
    free = [f for f in entity.fields if f.name not in avoid and f.name != action_field]
    numeric = [f for f in free if f.kind in NUMERIC_KINDS]
    lists = [f for f in free if f.kind == "ref_list"]
    options: list[str] = []
    if numeric:
        options += ["compare", "compare"]
    if len(numeric) >= 2:
        options.append("arith")
    if any(f.nullable for f in free):
        options.append("null")
    if any(f.kind in ("boolean", "enum") for f in free):
        options.append("equals")
    if lists:
        options += ["count", "sum", "quantified"]
    if not options:
        return None
    choice = rng.choice(options)
    if choice == "compare":
        f = rng.choice(numeric)
        return Compare(FieldOperand(f.name), rng.choice(("<", "<=", ">", ">=")), _numeric_literal(rng, f))
    if choice == "arith":
        a, b = rng.sample(numeric, 2)
        return Compare(
            ArithOperand(a.name, rng.choice(("+", "-", "*")), b.name),
            rng.choice((">", ">=", "<", "<=")),
            rng.randint(0, 100),
        )
    if choice == "null":
        f = rng.choice([f for f in free if f.nullable])  # only a nullable field can be null
        return NullCheck(f.name, rng.random() < 0.3)
    if choice == "equals":
        f = rng.choice([f for f in free if f.kind in ("boolean", "enum")])
        return Compare(FieldOperand(f.name), rng.choice(("==", "!=")), literal_for(rng, state, f))  # type: ignore[arg-type]
    lst = rng.choice(lists)
    target = state.entity(lst.target or "")
    assert target is not None
    tnum = [f for f in target.fields if f.kind in NUMERIC_KINDS]
    if choice == "count" or (choice == "sum" and not tnum):
        return Compare(CountOperand(lst.name), rng.choice((">", ">=", "<=")), rng.randint(0, 3))
    if choice == "sum":
        return Compare(
            SumOperand(lst.name, rng.choice(tnum).name), rng.choice((">", ">=", "<", "<=")), rng.randint(0, 200)
        )
    cands = [f for f in target.fields if f.kind in NUMERIC_KINDS or f.kind in ("boolean", "enum")]
    if not cands:
        return Compare(CountOperand(lst.name), ">", rng.randint(0, 2))
    f = rng.choice(cands)
    value: object
    if f.kind in NUMERIC_KINDS:
        op, value = rng.choice((">", ">=", "<", "<=")), _numeric_literal(rng, f)
    else:
        op, value = "==", literal_for(rng, state, f)
    return Quantified(rng.choice(("any", "all")), lst.name, f.name, op, value)  # type: ignore[arg-type]


def _simple_effect(rng: random.Random, state: State, entity: Entity, skip: str | None) -> SetValue | Increment | None:
    cands = [f for f in entity.fields if f.name != skip and f.kind not in ("ref", "ref_list", "datetime")]
    if not cands:
        return None
    f = rng.choice(cands)
    if f.kind in NUMERIC_KINDS and rng.random() < 0.6:
        amount: int | float = rng.choice((1, 2, 5, -1)) if f.kind == "integer" else rng.choice((0.5, 1.5, 10.0, -2.5))
        return Increment(f.name, amount)
    value = literal_for(rng, state, f)
    if value is None:
        return SetValue(f.name, None) if f.nullable else None
    return SetValue(f.name, value)  # type: ignore[arg-type]


def random_effect(rng: random.Random, state: State, entity: Entity, action_field: str) -> Effect | None:
    refs = [f for f in entity.fields if f.kind == "ref"]
    lists = [f for f in entity.fields if f.kind == "ref_list"]
    numeric = [f for f in entity.fields if f.kind in NUMERIC_KINDS]
    roll = rng.random()
    if refs and roll < 0.25:
        f = rng.choice(refs)
        inner = _simple_effect(rng, state, state.entity(f.target or "") or entity, None)
        return OnReference(f.name, inner) if inner else None
    if lists and roll < 0.45:
        f = rng.choice(lists)
        inner = _simple_effect(rng, state, state.entity(f.target or "") or entity, None)
        return ForEach(f.name, inner) if inner else None
    if len(numeric) >= 2 and roll < 0.6:
        target = rng.choice(numeric)
        pool = numeric if target.kind == "float" else [f for f in numeric if f.kind == "integer"]
        if pool:
            a, b = rng.sample(pool, 2) if len(pool) >= 2 else (pool[0], pool[0])
            return Compute(target.name, a.name, rng.choice(("+", "-", "*")), b.name)
    return _simple_effect(rng, state, entity, action_field)


def random_action(rng: random.Random, namer: Namer, state: State, entity: Entity) -> Action | None:
    """A new action on one of the entity's enum fields, with up to two guards and two effects."""
    enum_fields = [f for f in entity.fields if f.kind == "enum"]
    if not enum_fields:
        return None
    f = rng.choice(enum_fields)
    en = state.enum(f.enum or "")
    if en is None or len(en.values) < 2:
        return None
    target = rng.choice(en.values)
    others = [v for v in en.values if v != target]
    sources = tuple(rng.sample(others, rng.randint(1, len(others))))
    taken = {a.name for a in state.actions if a.entity == entity.name}
    conditions: list[Condition] = []
    used: set[str] = set()
    for _ in range(rng.choice((0, 1, 1, 2))):
        c = random_condition(rng, state, entity, used, f.name)
        if c is not None and c not in conditions:
            conditions.append(c)
            used |= condition_fields(c)
    effects: list[Effect] = []
    for _ in range(rng.choice((0, 1, 1, 2))):
        x = random_effect(rng, state, entity, f.name)
        if x is not None and x not in effects:
            effects.append(x)
    return Action(
        entity=entity.name,
        name=namer.action_name(rng, taken),
        field=f.name,
        sources=sources,
        target=target,
        conditions=tuple(conditions),
        effects=tuple(effects),
    )


def condition_fields(c: Condition) -> set[str]:
    """The fields of the acting entity a guard reads."""
    if isinstance(c, NullCheck):
        return {c.field}
    if isinstance(c, Quantified):
        return {c.list_field}
    left = c.left
    if isinstance(left, FieldOperand):
        return {left.field}
    if isinstance(left, ArithOperand):
        return {left.left, left.right}
    return {left.list_field}


def set_before(a: Action, x: Effect) -> dict[str, Any]:
    """Own fields an earlier effect of the action sets to a number before `x` runs (the last such set wins)."""
    out: dict[str, Any] = {}
    for y in a.effects[: a.effects.index(x)]:
        if isinstance(y, SetValue) and isinstance(y.value, int | float) and not isinstance(y.value, bool):
            out[y.field] = y.value
        elif isinstance(y, Increment | Compute):
            out.pop(y.field, None)
    return out
