"""The generator's shortcuts answer what the full computations they replace would: `Batch.cancels` (a lookup per
touched key) against the difference of every key of the state before and after, and `prune` (which keeps its verdict
on an action whose context is unchanged) against a prune of a fresh copy holding no kept verdicts."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from staminad.bench.cancel import Batch
from staminad.bench.changes import (
    Change,
    ChangeError,
    DeleteAnalytics,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RemoveCondition,
    RemoveEffect,
)
from staminad.bench.naming import Namer
from staminad.bench.sampler import PROPOSERS, Context
from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.schema import Analytics, State, dump_state, load_state

REMOVALS = ("delete_entity", "delete_field", "remove_action", "remove_condition", "remove_effect", "delete_analytics")


def _all_keys(state: State) -> set[tuple[Any, ...]]:
    """Every removable part of a state, keyed as `cancel` keys them, built from scratch."""
    out: set[tuple[Any, ...]] = {("enum", en.name) for en in state.enums}
    for e in state.entities:
        out |= {("entity", e.name), *(("field", e.name, f.name) for f in e.fields)}
    for a in state.actions:
        out.add(("action", a.entity, a.name))
        out |= {("guard", a.entity, a.name, msgspec.json.encode(c)) for c in a.conditions}
        out |= {("effect", a.entity, a.name, msgspec.json.encode(x)) for x in a.effects}
    return out | {("analytics", an.entity, an.field, an.op) for an in state.analytics}


def _walk(seed: int, turns: int) -> Iterator[tuple[State, Batch]]:
    """Every intermediate state of a scenario with the batch drawn so far in its turn."""
    scenario = generate(seed, ScenarioParams(turns=turns, sampler="weighted"), keep_steps=True)
    for batch, states in zip(scenario.turns, scenario.steps, strict=True):
        drawn = Batch()
        for change, state in zip(batch, states, strict=False):
            yield state, drawn
            drawn.record(change)


def _aimed(state: State, drawn: Batch) -> Iterator[Change]:
    """Removals of what the batch touched (most of which cancel it), one per touched key."""
    for key in drawn.touched:
        kind, *rest = key
        if kind == "entity":
            yield DeleteEntity(rest[0])
        elif kind == "field":
            yield DeleteField(rest[0], rest[1])
        elif kind == "analytics":
            yield DeleteAnalytics(Analytics(entity=rest[0], field=rest[1], op=rest[2]))
        elif kind in ("action", "guard", "effect") and (a := state.action(rest[0], rest[1])) is not None:
            if kind == "action":
                yield RemoveAction(a.entity, a.name)
            for c in a.conditions if kind == "guard" else ():
                yield RemoveCondition(a.entity, a.name, c)
            for x in a.effects if kind == "effect" else ():
                yield RemoveEffect(a.entity, a.name, x)


@pytest.mark.parametrize("seed", range(2))
def test_cancels_agrees_with_the_full_key_difference(seed: int) -> None:
    """For removals proposed at every step of a scenario, `cancels` says what the full key difference says."""
    rng = random.Random(seed)
    namer = Namer("themed", random.Random(seed))
    checked: Counter[tuple[str, bool]] = Counter()
    for state, drawn in _walk(seed, 100):
        ctx = Context(state, rng, namer, 0)  # young: no floor holds a removal back
        for change in (*(PROPOSERS[kind](ctx) for kind in REMOVALS), *_aimed(state, drawn)):
            try:
                assert change is not None
                change.validate(state)
            except (AssertionError, ChangeError):
                continue
            full = bool((_all_keys(state) - _all_keys(change.apply(state))) & drawn.touched)
            assert drawn.cancels(state, change) == full, change
            checked[type(change).__name__, full] += 1
    assert min(checked.values()) > 5 and len(checked) == 12  # each removal, cancelling and not


@pytest.mark.parametrize("seed", range(2))
def test_prune_with_kept_verdicts_matches_a_fresh_prune(seed: int) -> None:
    """Deleting a field or an entity at every step gives the same state whether or not verdicts were kept."""
    rng = random.Random(seed)
    checked = 0
    for state, _ in _walk(seed, 80):
        e = rng.choice(state.entities)
        for change in (DeleteEntity(e.name), DeleteField(e.name, rng.choice(e.fields).name)):
            try:
                change.validate(state)
            except ChangeError:
                continue
            fresh = load_state(dump_state(state))  # new objects: no verdict kept on any action
            assert dump_state(change.apply(state)) == dump_state(change.apply(fresh)), change
            checked += 1
    assert checked > 400
