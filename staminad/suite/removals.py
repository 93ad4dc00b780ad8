"""Tests at the turn a guard or an effect is removed: what was removed must be gone.

A removed guard is tested with data where it alone would refuse the action (every remaining guard
holds): the action must now succeed. A removed effect is tested with data where it would have
changed something: the action must leave that as it was and still apply the remaining effects.
The data is planned against a probe action that still has the removed item, so a server that kept
it would visibly disagree; the expected outcome is that of the current action (`semantics`).
"""

from __future__ import annotations

import random

import msgspec

from staminad.bench.phrases import condition_phrase, effect_phrase
from staminad.bench.schema import Condition, Effect, State
from staminad.suite.actions import ActionTest, _plan, _steps
from staminad.suite.draws import pick
from staminad.suite.semantics import apply_action

_DRAWS = 6  # plans drawn for a removed effect before giving up on one it would visibly change


def removed_guard_test(
    state: State, entity: str, action: str, guard: Condition, rng: random.Random
) -> ActionTest | None:
    """Data where only the removed guard would refuse: the action must answer 200 and apply its effects."""
    e, a = state.entity(entity), state.action(entity, action)
    assert e is not None and a is not None
    probe = msgspec.structs.replace(a, conditions=(guard, *a.conditions))
    name = f"{e.endpoint}_{a.name}_guard_removed"
    wants = [False] + [True] * len(a.conditions)
    found = _plan(rng, state, e, probe, wants, pick(rng, name, a.sources))
    if found is None:
        return None
    why = f"the guard `{condition_phrase(guard)}` was removed: it no longer refuses, so 200"
    return name, "business_logic", "guards", _steps(state, e, a, *found, why), ()


def removed_effect_test(
    state: State, entity: str, action: str, effect: Effect, index: int, rng: random.Random
) -> ActionTest | None:
    """Data where the removed effect, run where it was (`index`), would change something: the action must apply
    only the remaining effects."""
    e, a = state.entity(entity), state.action(entity, action)
    assert e is not None and a is not None
    probe = msgspec.structs.replace(a, effects=(*a.effects[:index], effect, *a.effects[index:]))
    name = f"{e.endpoint}_{a.name}_effect_removed"
    source = pick(rng, name, a.sources)
    wants = [True] * len(a.conditions)
    for _ in range(_DRAWS):
        found = _plan(rng, state, e, probe, wants, source)
        if found is None:
            continue
        plan, world = found
        oid = plan.body["id"]
        if apply_action(world, state, probe, oid) != apply_action(world, state, a, oid):
            why = f"the effect `{effect_phrase(state, a.entity, effect)}` was removed: 200 without it"
            return name, "business_logic", "effects", _steps(state, e, a, plan, world, why), ()
    return None
