"""Tests of one action: 404, then 400 for a wrong state, then 409 per unmet guard, then 200 with effects.

Each test's data comes from a plan shaped so the guards hold or fail as intended; the semantics
module then predicts the status and every touched entity, and a plan whose prediction disagrees
with the intent is redrawn (up to a bound) rather than used.
"""

from __future__ import annotations

import random
from typing import Any

from staminad.bench.parts import condition_fields
from staminad.bench.phrases import condition_phrase
from staminad.bench.schema import Action, Entity, ForEach, OnReference, State
from staminad.suite.data import scalar_body, stored
from staminad.suite.model import Check, Equals, Step, req
from staminad.suite.plans import Plan, shape
from staminad.suite.semantics import World, apply_action, holds

_TRIES = 25
ActionTest = tuple[str, str, str, list[Step]]


def _world(state: State, entity: Entity, plan: Plan) -> World:
    world: World = {}
    for e, body in plan.related:
        world.setdefault(e.name, {})[body["id"]] = stored(state, e, body)
    world.setdefault(entity.name, {})[plan.body["id"]] = stored(state, entity, plan.body)
    return world


def _plan(rng: random.Random, state: State, entity: Entity, action: Action, wants: list[bool],
          enum_value: str) -> tuple[Plan, World] | None:
    """A plan where guard i holds iff wants[i], with the enum field at `enum_value`."""
    guarded = set().union(*(condition_fields(c) for c in action.conditions)) if action.conditions else set()
    for attempt in range(_TRIES):
        plan = Plan(scalar_body(rng, state, entity, f"{entity.endpoint}-act{attempt}"))
        if not all(shape(rng, state, entity, plan, c, w) for c, w in zip(action.conditions, wants, strict=True)):
            continue
        for x in action.effects:  # give cross-entity effects something to act on
            link = x.ref_field if isinstance(x, OnReference) else x.list_field if isinstance(x, ForEach) else None
            f = entity.field(link) if link else None
            if f is not None and f.name not in plan.body and f.name not in guarded:
                plan.link(rng, state, f, [{}] if f.kind == "ref" else [{}, {}])
        plan.body[action.field] = enum_value
        world = _world(state, entity, plan)
        obj = world[entity.name][plan.body["id"]]
        if [holds(world, state, entity, obj, c) for c in action.conditions] == wants:
            return plan, world
    return None


def _setup(plan: Plan, entity: Entity) -> list[Step]:
    steps = [req("POST", f"/{e.endpoint}", body, why=f"create a related {e.name}") for e, body in plan.related]
    steps.append(req("POST", f"/{entity.endpoint}", plan.body, why=f"create the {entity.name} to act on"))
    return steps


def _checks(obj: dict[str, Any]) -> tuple[Check, ...]:
    return tuple(Equals((k,), v) for k, v in obj.items())


def action_tests(state: State, action: Action, rng: random.Random) -> list[ActionTest]:
    entity = state.entity(action.entity)
    field = entity.field(action.field) if entity else None
    enum = state.enum(field.enum or "") if field else None
    assert entity is not None and enum is not None
    ep, name = entity.endpoint, f"{entity.endpoint}_{action.name}"
    path = f"/{ep}/{{id}}/{action.name}"
    out: list[ActionTest] = [(f"{name}_unknown_id", "wrong_response_format", "actions", [
        req("POST", f"/{ep}/no-such-id/{action.name}", expect=(404,), action=True,
            why=f"{path} on an unknown id must answer 404")])]
    n = len(action.conditions)
    outside = [v for v in enum.values if v not in action.sources]
    if outside:
        # All guards fail too where possible: 400 must win over 409.
        found = _plan(rng, state, entity, action, [False] * n, rng.choice(outside)) if n else None
        found = found or _plan(rng, state, entity, action, [True] * n, rng.choice(outside))
        if found:
            plan, world = found
            oid = plan.body["id"]
            out.append((f"{name}_wrong_state", "wrong_response_format", "actions", [
                *_setup(plan, entity),
                req("POST", f"/{ep}/{oid}/{action.name}", expect=(400,), action=True,
                    why=f"{action.field}={plan.body[action.field]!r} is not an allowed state, so 400 (checked "
                        "before guards)"),
                req("GET", f"/{ep}/{oid}", checks=_checks(world[entity.name][oid]),
                    why="a rejected action must change nothing")]))
    for i, cond in enumerate(action.conditions):
        wants = [j != i for j in range(n)]
        found = _plan(rng, state, entity, action, wants, rng.choice(action.sources))
        if found is None:
            continue
        plan, world = found
        oid = plan.body["id"]
        out.append((f"{name}_guard_{i + 1}_unmet", "business_logic", "actions", [
            *_setup(plan, entity),
            req("POST", f"/{ep}/{oid}/{action.name}", expect=(409,), action=True,
                why=f"the guard `{condition_phrase(cond)}` does not hold, so 409"),
            req("GET", f"/{ep}/{oid}", checks=_checks(world[entity.name][oid]),
                why="a rejected action must change nothing")]))
    found = _plan(rng, state, entity, action, [True] * n, rng.choice(action.sources))
    if found is not None:
        plan, world = found
        oid = plan.body["id"]
        status, after = apply_action(world, state, action, oid)
        assert status == 200
        steps = [*_setup(plan, entity),
                 req("POST", f"/{ep}/{oid}/{action.name}", expect=(200,), action=True,
                     checks=_checks(after[entity.name][oid]),
                     why="every guard holds: 200 with the effects applied and the new state")]
        for e_name, table in after.items():
            e = state.entity(e_name)
            assert e is not None
            for obj_id, obj in table.items():
                if obj != world[e_name][obj_id] or obj_id == oid:
                    steps.append(req("GET", f"/{e.endpoint}/{obj_id}", checks=_checks(obj),
                                     why=f"the action's effects must be stored on {e.name} {obj_id}"))
        out.append((f"{name}_succeeds", "business_logic", "actions", steps))
    return out
