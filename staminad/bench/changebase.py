"""What every change shares: `ChangeError`, the check that raises it, and the lookups and replacements that
leave the old state untouched."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from protocol.errors import UsageError
from staminad.bench.namerules import field_name_problem
from staminad.bench.schema import (
    Entity,
    EnumType,
    Field,
    State,
    is_camel,
    is_snake,
)
from staminad.bench.values import scalar_fits


class ChangeError(UsageError, ValueError):
    """A change that does not fit the state it is applied to."""


T = TypeVar("T")


def need(ok: object, message: str) -> None:
    if not ok:
        raise ChangeError(message)


def entity_named(state: State, name: str) -> Entity:
    e = state.entity(name)
    need(e is not None, f"entity {name!r} does not exist")
    assert e is not None
    return e


def replaced(items: Sequence[T], match: Callable[[T], bool], new: T) -> tuple[T, ...]:
    return tuple(new if match(x) else x for x in items)


def with_entity(state: State, entity: Entity) -> State:
    return state.with_entity(entity)


def values_free(state: State, values: tuple[str, ...], but: str = "") -> bool:
    """No enum type of the state other than `but` has exactly these values (in any order): a new or grown
    enum type never repeats another one."""
    owner = _value_sets(state.enums).get(frozenset(values))
    return owner is None or owner == but


_last_sets: list[tuple[tuple[EnumType, ...], dict[frozenset[str], str]]] = []


def _value_sets(enums: tuple[EnumType, ...]) -> dict[frozenset[str], str]:
    """Each enum type's values as a set, and its name; kept for the enums last asked about (a state's enum
    types change far less often than the state)."""
    entry = _last_sets[0] if _last_sets else None  # read once: another thread may replace it meanwhile
    if entry is None or entry[0] is not enums:
        entry = (enums, {frozenset(e.values): e.name for e in enums})
        _last_sets[:] = [entry]
    return entry[1]


def check_name(state: State, entity: Entity, f: Field, leaving: str = "") -> None:
    """`f`'s name keeps the rules of `namerules` on `entity` (whose field `leaving` it replaces, if any)."""
    clash = field_name_problem(state, entity, f, leaving)
    need(clash is None, str(clash))


def check_field(state: State, entity: Entity, f: Field, new_enum: EnumType | None) -> None:
    need(is_snake(f.name) and f.name != "id", f"field name {f.name!r} must be snake_case and not 'id'")
    need(entity.field(f.name) is None, f"entity {entity.name} already has a field {f.name!r}")
    check_name(state, entity, f)
    if f.kind == "enum":
        if new_enum is not None:
            need(new_enum.name == f.enum, "the new enum type must be the one the field uses")
            need(state.enum(new_enum.name) is None, f"enum type {new_enum.name} already exists")
            need(is_camel(new_enum.name) and new_enum.values, "enum types need a CamelCase name and values")
            need(len(set(new_enum.values)) == len(new_enum.values), "enum values must be unique")
            need(all(is_snake(v) for v in new_enum.values), "enum values must be snake_case")
            need(values_free(state, new_enum.values), f"an enum type already has the values of {new_enum.name}")
        else:
            need(state.enum(f.enum or "") is not None, f"enum type {f.enum!r} does not exist")
    if f.kind in ("ref", "ref_list"):
        need(f.target is not None and state.entity(f.target) is not None, f"reference target {f.target!r} missing")
        need(f.target != entity.name, "an entity may not reference itself")
        if f.kind == "ref":
            need(f.nullable and not f.required, "references are optional and nullable")
        else:
            need(not f.nullable and not f.required and not f.has_default, "reference lists are optional, non-null")
    if f.has_default:
        probe = state.evolve(enums=(*state.enums, new_enum) if new_enum else state.enums)
        need(scalar_fits(probe, f, f.default), f"default {f.default!r} breaks the rules of {f.name}")
