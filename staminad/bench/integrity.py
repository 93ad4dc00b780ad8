"""Well-formedness of a state: what a condition, effect or analytics needs to stay meaningful.

`problems(state)` lists every broken invariant, the naming policy of `namerules` included (the property
tests require it to be empty after every change); `prune(state)` drops whatever a destructive change left
dangling, which is how a deleted field or entity takes its dependent analytics, conditions, effects and actions
with it. A null guard is well-formed only on a nullable field (no change makes a field non-nullable, so one
stays meaningful), and no two enum types hold the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from staminad.bench.namerules import name_problems
from staminad.bench.schema import (
    NUMERIC_KINDS,
    Action,
    Analytics,
    ArithOperand,
    Compare,
    Compute,
    Condition,
    CountOperand,
    Effect,
    Entity,
    FieldOperand,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
    endpoint_of,
    is_camel,
    is_snake,
)
from staminad.bench.values import is_int, is_number, scalar_fits, type_fits

_RESERVED_ENDPOINTS = frozenset({"reset", "analytics"})

T = TypeVar("T")


def _kind(entity: Entity, field: str) -> str | None:
    f = entity.field(field)
    return f.kind if f else None


def _target(state: State, entity: Entity, field: str, kind: str) -> Entity | None:
    f = entity.field(field)
    if f is None or f.kind != kind or f.target is None:
        return None
    return state.entity(f.target)


def _literal_matches(state: State, entity: Entity, field: str, op: str, value: object) -> bool:
    f = entity.field(field)
    if f is None:
        return False
    if f.kind in NUMERIC_KINDS:
        return is_number(value)
    if op not in ("==", "!="):
        return False
    if f.kind == "boolean":
        return isinstance(value, bool)
    if f.kind in ("string", "enum"):
        return isinstance(value, str) and (f.kind == "string" or type_fits(state, f, value))
    return False


def condition_ok(state: State, entity: Entity, cond: Condition) -> bool:
    """A guard is type-correct on `entity` in `state`."""
    if isinstance(cond, NullCheck):
        f = entity.field(cond.field)
        return f is not None and f.nullable  # a non-nullable field is never null: the guard would mean nothing
    if isinstance(cond, Quantified):
        target = _target(state, entity, cond.list_field, "ref_list")
        return target is not None and _literal_matches(state, target, cond.field, cond.op, cond.value)
    assert isinstance(cond, Compare)
    left = cond.left
    if isinstance(left, FieldOperand):
        return _literal_matches(state, entity, left.field, cond.op, cond.value)
    if not is_number(cond.value):
        return False
    if isinstance(left, ArithOperand):
        return _kind(entity, left.left) in NUMERIC_KINDS and _kind(entity, left.right) in NUMERIC_KINDS
    if isinstance(left, CountOperand):
        return _kind(entity, left.list_field) == "ref_list"
    assert isinstance(left, SumOperand)
    target = _target(state, entity, left.list_field, "ref_list")
    return target is not None and _kind(target, left.field) in NUMERIC_KINDS


def _simple_effect_ok(state: State, entity: Entity, effect: SetValue | Increment, action_field: str | None) -> bool:
    f = entity.field(effect.field)
    if f is None or f.name == action_field or f.kind in ("ref", "ref_list"):
        return False
    if isinstance(effect, SetValue):
        if effect.value is None:
            return f.nullable
        return type_fits(state, f, effect.value)
    if f.kind == "integer":
        return is_int(effect.amount)
    return f.kind == "float" and is_number(effect.amount)


def effect_ok(state: State, entity: Entity, effect: Effect, action_field: str) -> bool:
    """An effect is type-correct on `entity` and never writes the action's own enum field."""
    if isinstance(effect, SetValue | Increment):
        return _simple_effect_ok(state, entity, effect, action_field)
    if isinstance(effect, Compute):
        kinds = (_kind(entity, effect.field), _kind(entity, effect.left), _kind(entity, effect.right))
        if effect.field == action_field or any(k not in NUMERIC_KINDS for k in kinds):
            return False
        return kinds[0] == "float" or (kinds[1] == "integer" and kinds[2] == "integer")
    if isinstance(effect, OnReference):
        target = _target(state, entity, effect.ref_field, "ref")
        return target is not None and _simple_effect_ok(state, target, effect.effect, None)
    assert isinstance(effect, ForEach)
    target = _target(state, entity, effect.list_field, "ref_list")
    return target is not None and _simple_effect_ok(state, target, effect.effect, None)


def analytics_ok(state: State, a: Analytics) -> bool:
    entity = state.entity(a.entity)
    if entity is None:
        return False
    if a.op == "count":
        return a.field is None
    return a.field is not None and _kind(entity, a.field) in NUMERIC_KINDS


def action_core_ok(state: State, a: Action) -> bool:
    """The action's entity and enum field exist and its source/target values are enum members."""
    entity = state.entity(a.entity)
    f = entity.field(a.field) if entity else None
    if f is None or f.kind != "enum":
        return False
    enum = state.enum(f.enum or "")
    if enum is None or a.target not in enum.values or not a.sources:
        return False
    return all(s in enum.values for s in a.sources)


def _context(state: State, entity: Entity) -> tuple[object, ...]:
    """Everything of `state` the checks of an action on `entity` read: the entity, the entities its references
    point at, and the enum types of their enum fields."""
    targets = state.entities_named(entity.targets)
    enum_types = entity.enum_types.union(*(t.enum_types for t in targets if t is not None)) if targets else None
    return (entity, targets, state.enums_named(entity.enum_types if enum_types is None else enum_types))


def _pruned_action(state: State, entity: Entity, a: Action) -> Action | None:
    """`a` as `prune` keeps it: itself when whole, rebuilt without its ill-typed guards and effects, or None."""
    if not action_core_ok(state, a):
        return None
    conditions = tuple(c for c in a.conditions if condition_ok(state, entity, c))
    effects = tuple(x for x in a.effects if effect_ok(state, entity, x, a.field))
    if len(conditions) == len(a.conditions) and len(effects) == len(a.effects):
        return a
    return Action(
        entity=a.entity,
        name=a.name,
        field=a.field,
        sources=a.sources,
        target=a.target,
        conditions=conditions,
        effects=effects,
    )


def prune(state: State) -> State:
    """Drop references to missing entities and everything that depended on a removed name."""
    # What is kept is kept as the same object: only what loses something is rebuilt.
    names = {e.name for e in state.entities}
    entities = tuple(
        e
        if e.targets <= names
        else Entity(name=e.name, fields=tuple(f for f in e.fields if f.target is None or f.target in names))
        for e in state.entities
    )
    if any(e is not d for e, d in zip(entities, state.entities, strict=True)):
        state = state.evolve(entities=entities)
    else:
        entities = state.entities
    analytics = tuple(a for a in state.analytics if analytics_ok(state, a))
    contexts: dict[str, tuple[object, ...]] = {}
    actions: list[Action] = []
    for a in state.actions:
        entity = state.entity(a.entity)
        if entity is None:
            continue
        context = contexts.get(a.entity)
        if context is None:
            context = contexts[a.entity] = _context(state, entity)
        memo = a.__dict__.get("_pruned")
        if memo is None or memo[0] != context:  # equal contexts read alike, so the kept answer stands
            memo = a.__dict__["_pruned"] = (context, _pruned_action(state, entity, a))
        if memo[1] is not None:
            actions.append(memo[1])
    used = set().union(*(e.enum_types for e in entities))
    enums = tuple(e for e in state.enums if e.name in used)
    return state.evolve(  # parts left whole stay the same tuples, so their name indexes carry over
        enums=kept(enums, state.enums),
        entities=entities,
        analytics=kept(analytics, state.analytics),
        actions=kept(actions, state.actions),
    )


def kept(new: Sequence[T], old: tuple[T, ...]) -> tuple[T, ...]:
    """`old` itself when `new` holds exactly its objects, else `new` as a tuple."""
    if len(new) == len(old) and all(x is y for x, y in zip(new, old, strict=True)):
        return old
    return tuple(new)


def problems(state: State) -> list[str]:  # noqa: C901 - one check per invariant, a list a reader audits top to bottom
    """Every invariant the state breaks; empty for a valid state."""
    out: list[str] = []
    endpoints = [e.endpoint for e in state.entities]
    if len(set(endpoints)) != len(endpoints):
        out.append("two entities share an endpoint")
    if not state.entities:
        out.append("no entities")
    enum_names = [e.name for e in state.enums]
    if len(set(enum_names)) != len(enum_names):
        out.append("duplicate enum type names")
    value_sets = [frozenset(en.values) for en in state.enums]
    if len(set(value_sets)) != len(value_sets):
        out.append("two enum types have the same values")
    for en in state.enums:
        if not is_camel(en.name) or not en.values or len(set(en.values)) != len(en.values):
            out.append(f"enum {en.name}: bad name or values")
        if not all(is_snake(v) for v in en.values):
            out.append(f"enum {en.name}: a value is not snake_case")
    for e in state.entities:
        if not is_camel(e.name) or endpoint_of(e.name) in _RESERVED_ENDPOINTS:
            out.append(f"entity {e.name}: bad name")
        fnames = [f.name for f in e.fields]
        if len(set(fnames)) != len(fnames) or "id" in fnames:
            out.append(f"entity {e.name}: duplicate or reserved field names")
        for f in e.fields:
            where = f"{e.name}.{f.name}"
            if not is_snake(f.name):
                out.append(f"{where}: not snake_case")
            if f.kind in ("ref", "ref_list"):
                if f.target is None or state.entity(f.target) is None:
                    out.append(f"{where}: dangling reference")
                if f.kind == "ref" and (not f.nullable or f.required):
                    out.append(f"{where}: references must be optional and nullable")
                if f.kind == "ref_list" and (f.nullable or f.required or f.has_default):
                    out.append(f"{where}: reference lists are optional, non-nullable, default []")
            if f.kind == "enum" and state.enum(f.enum or "") is None:
                out.append(f"{where}: unknown enum type {f.enum}")
            if f.minimum is not None and f.maximum is not None and f.minimum > f.maximum:
                out.append(f"{where}: minimum above maximum")
            if f.min_length is not None and f.max_length is not None and f.min_length > f.max_length:
                out.append(f"{where}: min_length above max_length")
            if f.has_default and not scalar_fits(state, f, f.default):
                out.append(f"{where}: default {f.default!r} violates the field's own rules")
            if not f.has_default and f.default is not None:
                out.append(f"{where}: default set without has_default")
    seen_analytics: set[str] = set()
    for a in state.analytics:
        if not analytics_ok(state, a):
            out.append(f"analytics {a.path()}: not over an existing numeric field")
        if a.path() in seen_analytics:
            out.append(f"analytics {a.path()}: duplicate")
        seen_analytics.add(a.path())
    seen_actions: set[tuple[str, str]] = set()
    for act in state.actions:
        key = (act.entity, act.name)
        if key in seen_actions or not is_snake(act.name):
            out.append(f"action {act.entity}.{act.name}: duplicate or bad name")
        seen_actions.add(key)
        if not action_core_ok(state, act):
            out.append(f"action {act.entity}.{act.name}: enum field or values missing")
            continue
        entity = state.entity(act.entity)
        assert entity is not None
        for c in act.conditions:
            if not condition_ok(state, entity, c):
                out.append(f"action {act.entity}.{act.name}: ill-typed condition {c!r}")
        for x in act.effects:
            if not effect_ok(state, entity, x, act.field):
                out.append(f"action {act.entity}.{act.name}: ill-typed effect {x!r}")
    return out + name_problems(state)
