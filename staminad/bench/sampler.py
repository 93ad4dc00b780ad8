"""p0 (the initial design) and pi_env (which changes each turn requests).

`initial_state` draws 2-3 entities of 4-5 fields, 1-2 analytics and sometimes actions. The
samplers pick a change type (uniformly, or by difficulty weights), then fill it in from the
current state; a batch of k changes is drawn against the intermediate states, so a turn never
holds a change its predecessors invalidated, nor one that undoes part of them (`cancel`).
Deletions are allowed only above a floor that rises with the scenario's age, which is what keeps
states growing for a thousand turns.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Literal

from staminad.bench.cancel import Batch
from staminad.bench.changes import (
    AddAction,
    AddAnalytics,
    AddCondition,
    AddEffect,
    AddEntity,
    AddEnumValue,
    AddField,
    Change,
    ChangeConstraints,
    ChangeError,
    DeleteAnalytics,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RemoveCondition,
    RemoveEffect,
    RenameEntity,
    RenameField,
)
from staminad.bench.namerules import FieldRoom, signature
from staminad.bench.naming import Namer
from staminad.bench.parts import (
    condition_fields,
    entity_fields,
    random_action,
    random_condition,
    random_effect,
    random_kind,
    reference_field,
    scalar_field,
)
from staminad.bench.schema import NUMERIC_KINDS, Analytics, Entity, Field, State

SamplerName = Literal["uniform", "weighted", "llm"]  # llm: proposed by a model (staminad/llmsample.py)

# Difficulty weights: changes that ripple through the code base are drawn more often.
DIFFICULTY_WEIGHTS: dict[str, float] = {
    "add_entity": 2.0,
    "delete_entity": 1.5,
    "rename_entity": 2.5,
    "add_field": 1.5,
    "delete_field": 1.0,
    "rename_field": 2.0,
    "change_constraints": 1.0,
    "add_analytics": 1.0,
    "delete_analytics": 0.5,
    "add_action": 2.5,
    "remove_action": 0.5,
    "add_condition": 2.0,
    "remove_condition": 0.5,
    "add_effect": 2.0,
    "remove_effect": 0.5,
    "add_enum_value": 1.0,
}


class Context:
    """What a proposal may look at: the state, the rng, the namer, and the scenario's age."""

    def __init__(self, state: State, rng: random.Random, namer: Namer, changes_so_far: int) -> None:
        self.state = state
        self.rng = rng
        self.namer = namer
        self.age = changes_so_far

    @property
    def entity_floor(self) -> int:
        return 2 + self.age // 10


def initial_state(rng: random.Random, namer: Namer) -> State:
    """p0: a small seeded design."""
    state = State()
    for i in range(rng.randint(2, 3)):
        name = namer.entity_name(rng, [e.name for e in state.entities])
        fields, enums = entity_fields(rng, namer, state, name, rng.randint(4, 5), force_enum=i == 0)
        state = AddEntity(Entity(name=name, fields=fields), enums).apply(state)
    if rng.random() < 0.5 and len(state.entities) > 1:
        a, b = rng.sample(state.entities, 2)
        ref = reference_field(rng, namer, state, b.name, {f.name for f in a.fields})
        if ref is not None:
            state = AddField(a.name, ref).apply(state)
    for _ in range(rng.randint(1, 2)):
        change = _add_analytics(Context(state, rng, namer, 0))
        if change is not None:
            state = change.apply(state)
    if rng.random() < 0.6:
        change = _add_action(Context(state, rng, namer, 0))
        if change is not None:
            state = change.apply(state)
    return state


def _add_entity(c: Context) -> Change | None:
    name = c.namer.entity_name(c.rng, [e.name for e in c.state.entities])
    fields, enums = entity_fields(c.rng, c.namer, c.state, name, c.rng.randint(3, 5), force_enum=c.rng.random() < 0.5)
    if c.rng.random() < 0.5:
        target = c.rng.choice(c.state.entities)
        ref = reference_field(c.rng, c.namer, c.state, target.name, {f.name for f in fields})
        fields = fields if ref is None else (*fields, ref)
    return AddEntity(Entity(name=name, fields=fields), enums)


def _delete_entity(c: Context) -> Change | None:
    if len(c.state.entities) <= c.entity_floor:
        return None
    return DeleteEntity(c.rng.choice(c.state.entities).name)


def _rename_entity(c: Context) -> Change | None:
    e = c.rng.choice(c.state.entities)
    return RenameEntity(e.name, c.namer.entity_name(c.rng, [x.name for x in c.state.entities]))


def _add_field(c: Context) -> Change | None:
    e = c.rng.choice(c.state.entities)
    taken = {f.name for f in e.fields}
    others = [x for x in c.state.entities if x.name != e.name]
    if others and c.rng.random() < 0.25:
        ref = reference_field(c.rng, c.namer, c.state, c.rng.choice(others).name, taken)
        return None if ref is None else AddField(e.name, ref)
    field, enum = scalar_field(c.rng, c.namer, c.state, e.name, taken, random_kind(c.rng))
    return AddField(e.name, field, enum)


def _delete_field(c: Context) -> Change | None:
    cands = [e for e in c.state.entities if len(e.fields) > 4]
    if not cands:
        return None
    e = c.rng.choice(cands)
    return DeleteField(e.name, c.rng.choice(e.fields).name)


def _rename_field(c: Context) -> Change | None:
    e = c.rng.choice(c.state.entities)
    f = c.rng.choice(e.fields)
    room = FieldRoom(c.state, [x.name for x in e.fields], signature(f), leaving=f.name)
    new = c.namer.renamed_field(c.rng, f.kind, f.name, room)
    return None if new is None else RenameField(e.name, f.name, new)


def _nth_pair(groups: list[tuple[Entity, tuple[Field, ...]]], i: int) -> tuple[Entity, Field]:
    """The i-th (entity, field) pair of the groups laid end to end."""
    for e, fs in groups:
        if i < len(fs):
            return e, fs[i]
        i -= len(fs)
    raise IndexError(i)


def _change_constraints(c: Context) -> Change | None:
    # The (entity, field) pairs are not listed one by one (states reach thousands of fields): the index drawn
    # from their count is the one choosing from their list would draw.
    cands = [(e, e.bounded_fields) for e in c.state.entities if e.bounded_fields]
    total = sum(len(fs) for _, fs in cands)
    if not total:
        return None
    e, f = _nth_pair(cands, c.rng.choice(range(total)))
    rng = c.rng
    dflt = f.default if f.has_default else None
    if f.kind in NUMERIC_KINDS:
        lo: int | float | None = rng.choice((None, 0, 1, 5))
        hi: int | float | None = rng.choice((None, 50, 500, 5000))
        if f.kind == "float":
            lo = None if lo is None else float(lo)
            hi = None if hi is None else float(hi)
        if isinstance(dflt, int | float):
            lo = None if lo is None or lo > dflt else lo
            hi = None if hi is None or hi < dflt else hi
        if lo is None and hi is None:
            hi = 100000 if f.kind == "integer" else 100000.0
        return ChangeConstraints(e.name, f.name, minimum=lo, maximum=hi)
    if f.kind == "string":
        lo_len = rng.choice((None, 1, 2, 3))
        hi_len = rng.choice((30, 60, 75, 90, 150, 300))
        if isinstance(dflt, str):
            lo_len = None if lo_len is None or lo_len > len(dflt) else lo_len
            hi_len = max(hi_len, len(dflt))
        return ChangeConstraints(e.name, f.name, min_length=lo_len, max_length=hi_len)
    after = rng.choice(("2018-01-01 00:00:00", "2020-01-01 00:00:00", "2021-06-01 00:00:00"))
    before = rng.choice(("2027-12-31 23:59:59", "2029-12-31 23:59:59", "2035-01-01 00:00:00"))
    return ChangeConstraints(e.name, f.name, after=after, before=before)


def _add_analytics(c: Context) -> Change | None:
    e = c.rng.choice(c.state.entities)
    numeric = [f for f in e.fields if f.kind in NUMERIC_KINDS]
    if numeric and c.rng.random() < 0.8:
        a = Analytics(entity=e.name, op=c.rng.choice(("avg", "min", "max", "sum")), field=c.rng.choice(numeric).name)
    else:
        a = Analytics(entity=e.name, op="count")
    if any(x.path() == a.path() for x in c.state.analytics):
        return None
    return AddAnalytics(a)


def _delete_analytics(c: Context) -> Change | None:
    if len(c.state.analytics) <= 1 + c.age // 40:
        return None
    return DeleteAnalytics(c.rng.choice(c.state.analytics))


def _add_action(c: Context) -> Change | None:
    cands = [e for e in c.state.entities if "enum" in e.kinds]
    if not cands:
        return None
    action = random_action(c.rng, c.namer, c.state, c.rng.choice(cands))
    return AddAction(action) if action else None


def _remove_action(c: Context) -> Change | None:
    if len(c.state.actions) <= 1 + c.age // 30:
        return None
    a = c.rng.choice(c.state.actions)
    return RemoveAction(a.entity, a.name)


def _add_condition(c: Context) -> Change | None:
    if not c.state.actions:
        return None
    a = c.rng.choice(c.state.actions)
    entity = c.state.entity(a.entity)
    assert entity is not None
    used = set().union(*(condition_fields(x) for x in a.conditions)) if a.conditions else set()
    cond = random_condition(c.rng, c.state, entity, used, a.field)
    return AddCondition(a.entity, a.name, cond) if cond is not None else None


def _remove_condition(c: Context) -> Change | None:
    cands = [a for a in c.state.actions if len(a.conditions) > 1]
    if not cands:
        return None
    a = c.rng.choice(cands)
    return RemoveCondition(a.entity, a.name, c.rng.choice(a.conditions))


def _add_effect(c: Context) -> Change | None:
    if not c.state.actions:
        return None
    a = c.rng.choice(c.state.actions)
    entity = c.state.entity(a.entity)
    assert entity is not None
    effect = random_effect(c.rng, c.state, entity, a.field)
    return AddEffect(a.entity, a.name, effect) if effect is not None else None


def _remove_effect(c: Context) -> Change | None:
    cands = [a for a in c.state.actions if len(a.effects) > 1]
    if not cands:
        return None
    a = c.rng.choice(cands)
    return RemoveEffect(a.entity, a.name, c.rng.choice(a.effects))


def _add_enum_value(c: Context) -> Change | None:
    if not c.state.enums:
        return None
    en = c.rng.choice(c.state.enums)
    value = c.namer.enum_value(c.rng, en.values, [x.values for x in c.state.enums])
    return AddEnumValue(en.name, value) if value is not None else None


PROPOSERS: dict[str, Callable[[Context], Change | None]] = {
    "add_entity": _add_entity,
    "delete_entity": _delete_entity,
    "rename_entity": _rename_entity,
    "add_field": _add_field,
    "delete_field": _delete_field,
    "rename_field": _rename_field,
    "change_constraints": _change_constraints,
    "add_analytics": _add_analytics,
    "delete_analytics": _delete_analytics,
    "add_action": _add_action,
    "remove_action": _remove_action,
    "add_condition": _add_condition,
    "remove_condition": _remove_condition,
    "add_effect": _add_effect,
    "remove_effect": _remove_effect,
    "add_enum_value": _add_enum_value,
}


def weights_for(sampler: SamplerName, overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """Per change type weights: all 1 for `uniform` (and `llm`'s procedural fallback), difficulty for `weighted`."""
    base = dict.fromkeys(PROPOSERS, 1.0) if sampler != "weighted" else dict(DIFFICULTY_WEIGHTS)
    for key, value in (overrides or {}).items():
        if key not in base:
            raise ValueError(f"unknown change type {key!r} in sampler weights")
        if value < 0:
            raise ValueError(f"weight of {key} must not be negative")
        base[key] = float(value)
    return base


def sample_change(
    state: State,
    rng: random.Random,
    namer: Namer,
    weights: Mapping[str, float],
    age: int,
    batch: Batch | None = None,
) -> Change:
    """Draw one valid change: a type by weight among those with a valid instance, then its fields; one that
    would undo part of the `batch` drawn so far is drawn again."""
    kinds = [k for k, w in weights.items() if w > 0]
    ctx = Context(state, rng, namer, age)
    for _ in range(200):
        kind = rng.choices(kinds, weights=[weights[k] for k in kinds])[0]
        change = PROPOSERS[kind](ctx)
        if change is None:
            continue
        try:
            change.validate(state)
        except ChangeError:
            continue
        if batch is not None and batch.cancels(state, change):
            continue
        return change
    raise RuntimeError("no valid change could be drawn; the sampler weights exclude every applicable type")


def sample_turn(
    state: State,
    rng: random.Random,
    namer: Namer,
    weights: Mapping[str, float],
    k: int,
    age: int,
    trail: list[State] | None = None,
) -> tuple[list[Change], State]:
    """pi_env for one turn: k changes, each drawn against the state its predecessors produced, none undoing
    another (`cancel`); each state is appended to `trail` when given."""
    changes: list[Change] = []
    batch = Batch()
    for i in range(k):
        change = sample_change(state, rng, namer, weights, age + i, batch)
        batch.record(change)
        state = batch.apply(state, change)
        changes.append(change)
        if trail is not None:
            trail.append(state)
    return changes, state
