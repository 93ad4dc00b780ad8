"""Tests of one action: 404, then 400 for a wrong state, then 409 per unmet guard, then 200 with effects.

Each test's data comes from a plan shaped so the guards hold or fail as intended (`plans`) and
the effects have something to show (`effectdata`); the semantics module then predicts the status
and every touched entity, and a plan whose guards disagree with the intent is redrawn (up to a
bound) rather than used. Besides ordinary values, guards are also met and failed by nulls and
empty lists, and effects run on inputs at their bounds, on null inputs and on missing targets:
the README's rules say what each of those must do, and ordinary data would never show it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec

from staminad.bench.parts import condition_fields
from staminad.bench.phrases import condition_phrase
from staminad.bench.schema import (
    Action,
    Compare,
    Compute,
    CountOperand,
    Entity,
    EnumType,
    FieldOperand,
    NullCheck,
    Quantified,
    State,
    SumOperand,
)
from staminad.reference.exercised import ORDER
from staminad.suite import computedata
from staminad.suite.data import scalar_body, stored
from staminad.suite.draws import ident, pick, skipped
from staminad.suite.effectdata import meet_effects
from staminad.suite.listrepeats import read_lists, repeated_lists
from staminad.suite.model import Check, Equals, Step, req
from staminad.suite.plans import Plan, shape
from staminad.suite.semantics import World, apply_action, compare, holds

_TRIES = 25
_REDRAWS = 8  # plans a later attempt draws for bounds data its first attempt found, before settling for less
ActionTest = tuple[str, str, str, list[Step], tuple[str, ...]]  # ..., the input classes it covers


def _world(state: State, entity: Entity, plan: Plan) -> World:
    world: World = {}
    for e, body in plan.related:
        world.setdefault(e.name, {})[body["id"]] = stored(state, e, body)
    world.setdefault(entity.name, {})[plan.body["id"]] = stored(state, entity, plan.body)
    return world


def _plan(
    rng: random.Random,
    state: State,
    entity: Entity,
    action: Action,
    wants: list[bool],
    enum_value: str,
    variants: dict[int, str] | None = None,
    mode: str = "plain",
    only: int | None = None,
) -> tuple[Plan, World] | None:
    """A plan where guard i holds iff wants[i] (shaped by variants[i], default "value"), with the enum
    field at `enum_value` and the effects met in `mode`; None if none fits, or if `mode` changes nothing."""
    guarded = set().union(*(condition_fields(c) for c in action.conditions)) if action.conditions else set()
    variants = variants or {}
    for attempt in range(_TRIES):
        plan = Plan(scalar_body(rng, state, entity, ident(rng, f"{entity.endpoint}-act{attempt}")))
        shaped = [
            shape(rng, state, entity, plan, c, w, variants.get(i, "value"))
            for i, (c, w) in enumerate(zip(action.conditions, wants, strict=True))
        ]
        if not all(shaped):
            if any(not ok for i, ok in enumerate(shaped) if i in variants):
                return None  # a null or empty variant that does not apply to its guard never will
            continue
        if not _meet(rng, state, entity, action, plan, guarded, mode, only) and mode != "plain":
            return None
        plan.body[action.field] = enum_value
        world = _world(state, entity, plan)
        obj = world[entity.name][plan.body["id"]]
        if [holds(world, state, entity, obj, c) for c in action.conditions] == wants:
            return plan, world
    return None


def _meet(
    rng: random.Random,
    state: State,
    entity: Entity,
    action: Action,
    plan: Plan,
    guarded: set[str],
    mode: str,
    only: int | None,
) -> bool:
    """Shape `plan` for the effects under `mode` (`effectdata`, and `computedata` for null targets and the empty
    lists guards allow); True when the mode changed anything."""
    if mode == "null_targets":
        assert only is not None
        return computedata.null_target(rng, state, entity, action, plan, guarded, only)
    changed = meet_effects(rng, state, entity, action, plan, guarded, mode, only)
    if mode == "empty":
        changed |= computedata.empty_guarded_lists(entity, action, plan, guarded)
    x = action.effects[only] if only is not None else None
    if changed and mode == "null_operands" and isinstance(x, Compute):
        computedata.distinct_target(rng, state, entity, x, plan, guarded)
    return changed


def _checks(obj: dict[str, Any], before: dict[str, Any] | None = None, own: str = "") -> tuple[Check, ...]:
    """Every key of `obj`; a key an effect changed from `before` (all but the action's own enum field `own`)
    cites the effects rule, so a wrong effect result is reported under it, not under the action's; a list
    read back unchanged cites the list-of-references rule (`data.stored_checks`)."""

    def rule(k: str, v: Any) -> str:
        if before is not None and k != own and before.get(k) != v:
            return "effects"
        return "reference-list" if isinstance(v, list) else ""

    return tuple(Equals((k,), v, rule(k, v)) for k, v in obj.items())


def _steps(state: State, entity: Entity, action: Action, plan: Plan, world: World, why: str) -> list[Step]:
    """Create the plan's entities, call the action, and check what it must return and store."""
    ep, oid = entity.endpoint, plan.body["id"]
    steps = [req("POST", f"/{e.endpoint}", body, why=f"create a related {e.name}") for e, body in plan.related]
    steps.append(req("POST", f"/{ep}", plan.body, why=f"create the {entity.name} to act on"))
    status, after = apply_action(world, state, action, oid)
    call = f"/{ep}/{oid}/{action.name}"
    if status != 200:
        steps.append(req("POST", call, expect=(status,), action=True, why=why))
        steps.append(
            req(
                "GET",
                f"/{ep}/{oid}",
                checks=_checks(world[entity.name][oid]),
                why="a rejected action must change nothing",
            )
        )
        return steps
    mine = after[entity.name][oid]
    steps.append(
        req(
            "POST",
            call,
            expect=(200,),
            action=True,
            checks=_checks(mine, world[entity.name][oid], action.field),
            why=why,
        )
    )
    for e_name, table in after.items():
        e = state.entity(e_name)
        assert e is not None
        for obj_id, obj in table.items():  # unchanged ones too: an effect on a null input changes nothing
            what = (
                "the action's effects must be stored on"
                if obj != world[e_name][obj_id] or obj_id == oid
                else "the action must leave unchanged"
            )
            own = action.field if obj_id == oid else ""
            checks = _checks(obj, world[e_name][obj_id], own)
            steps.append(req("GET", f"/{e.endpoint}/{obj_id}", checks=checks, why=f"{what} {e.name} {obj_id}"))
    return steps


def _extra_variants(cond: object) -> list[tuple[str, str, bool]]:
    """(label, variant, want) of the null and empty-list cases a guard has besides its ordinary ones."""
    out: list[tuple[str, str, bool]] = []
    if isinstance(cond, Quantified):
        out.append(("null", "null", False))
        out.append(("empty", "empty", cond.quantifier == "all"))
    elif isinstance(cond, NullCheck):
        out.append(("falsy", "falsy", not cond.is_null))
    elif isinstance(cond, Compare):
        if isinstance(cond.left, SumOperand):
            out.append(("empty", "empty", True))
        elif isinstance(cond.left, CountOperand):  # the count of an empty list is 0, whether that passes or not
            out.append(("empty", "empty", compare(0, cond.op, cond.value)))
        else:
            out.append(("null", "null", False))
    return out


class _Action(NamedTuple):
    """What every test of one action is made from: the state, the entity, its state field's enum and the draws."""

    state: State
    entity: Entity
    action: Action
    enum: EnumType
    rng: random.Random

    @property
    def name(self) -> str:
        return f"{self.entity.endpoint}_{self.action.name}"

    def steps(self, plan: Plan, world: World, why: str) -> list[Step]:
        return _steps(self.state, self.entity, self.action, plan, world, why)

    def plan(
        self,
        wants: list[bool],
        source: str,
        variants: dict[int, str] | None = None,
        mode: str = "plain",
        only: int | None = None,
    ) -> tuple[Plan, World] | None:
        return _plan(self.rng, self.state, self.entity, self.action, wants, source, variants, mode, only)


def _unknown_id(a: _Action) -> list[ActionTest]:
    ep, action = a.entity.endpoint, a.action
    step = req(
        "POST",
        f"/{ep}/{ident(a.rng, 'no-such-id')}/{action.name}",
        expect=(404,),
        action=True,
        why=f"/{ep}/{{id}}/{action.name} on an unknown id must answer 404",
    )
    return [(f"{a.name}_unknown_id", "wrong_response_format", "actions", [step], ())]


def _wrong_state(a: _Action) -> list[ActionTest]:
    """A state outside the action's sources is refused with 400, even where guards fail too (400 wins over 409)."""
    action, n = a.action, len(a.action.conditions)
    outside = [v for v in a.enum.values if v not in action.sources]
    if not outside:
        return []
    # Guards fail too where possible (all, else one): 400 must win over 409.
    value = pick(a.rng, f"{a.name}_wrong_state", outside)
    found = None
    for wants in ([[False] * n] if n else []) + [[j != i for j in range(n)] for i in range(n)] + [[True] * n]:
        found = found or a.plan(wants, value)
    if not found:
        return []
    plan, world = found
    why = f"{action.field}={plan.body[action.field]!r} is not an allowed state, so 400 (checked before guards)"
    return [(f"{a.name}_wrong_state", "wrong_response_format", "actions", a.steps(plan, world, why), ())]


HOW = {"null": "with a null value", "empty": "for an empty list", "falsy": 'with false, 0 or "" (not null)'}


def _guards(a: _Action) -> list[ActionTest]:
    """Each guard unmet (409), and its null, empty and falsy cases, every other guard holding."""
    action, n = a.action, len(a.action.conditions)
    out: list[ActionTest] = []
    for i, cond in enumerate(action.conditions):
        phrase = condition_phrase(cond)
        found = a.plan([j != i for j in range(n)], pick(a.rng, f"{a.name}_guard_{i + 1}_unmet", action.sources))
        if found is not None:
            steps = a.steps(found[0], found[1], f"the guard `{phrase}` does not hold, so 409")
            out.append((f"{a.name}_guard_{i + 1}_unmet", "business_logic", "guards", steps, ()))
        for label, variant, want in _extra_variants(cond):
            wants = [want if j == i else True for j in range(n)]
            source = pick(a.rng, f"{a.name}_guard_{i + 1}_{label}", action.sources)
            found = a.plan(wants, source, {i: variant})
            if found is not None:
                verdict = "holds, so 200" if want else "does not hold, so 409"
                steps = a.steps(found[0], found[1], f"the guard `{phrase}` {HOW[variant]} {verdict}")
                classes = (_guard_class(cond, variant),)
                out.append((f"{a.name}_guard_{i + 1}_{label}", "business_logic", "guards", steps, classes))
    return out


# A successful run's mode -> why it must succeed as it does.
SUCCESS_WHYS = {
    "bounds": "every guard holds: 200 with the effects applied (stored even past a bound) and the new state",
    "nulls": "every guard holds: 200; an effect whose input is null changes nothing",
    "null_operands": "every guard holds: 200; a computation with a null operand changes nothing",
    "null_targets": "every guard holds: 200; a computation whose target is null changes nothing if the target "
    "is an operand (a null input), else stores its result",
    "empty": "every guard holds: 200; effects on a null reference or an empty list reach nothing",
}


def _success_runs(action: Action) -> list[tuple[str, str, str, int | None]]:
    """(mode, name suffix, rule, the computation it is about) of each run in which every guard holds."""
    computes = [k for k, x in enumerate(action.effects) if isinstance(x, Compute)]
    runs: list[tuple[str, str, str, int | None]] = [
        ("bounds", "succeeds", "actions", None),
        ("nulls", "succeeds_null_inputs", "effects", None),
    ]
    runs += [
        ("null_operands", "succeeds_null_operands" + (f"_{j + 1}" if j else ""), "effects", k)
        for j, k in enumerate(computes)
    ]  # one per computation: a null operand of each must change nothing
    runs += [
        ("null_targets", "succeeds_null_target" + (f"_{j + 1}" if j else ""), "effects", k)
        for j, k in enumerate(computes)
    ]  # one per computation: its target null before (an input where it is an operand, else overwritten)
    runs.append(("empty", "succeeds_no_targets", "effects", None))
    return runs


def _successes(a: _Action) -> list[ActionTest]:
    action, rng, n = a.action, a.rng, len(a.action.conditions)
    out: list[ActionTest] = []
    for mode, suffix, rule, only in _success_runs(action):
        source = pick(rng, f"{a.name}_{suffix}", action.sources)
        found = a.plan([True] * n, source, mode=mode, only=only)
        if found is None and mode == "bounds" and skipped(rng, f"{a.name}_{suffix}/plain"):
            for _ in range(_REDRAWS):  # the first attempt's test crossed a bound: a retry's must too, where it can
                found = found or a.plan([True] * n, source, mode=mode)
        if found is None and mode == "bounds":
            found = a.plan([True] * n, pick(rng, f"{a.name}_{suffix}/plain", action.sources))
        if found is not None:
            steps = a.steps(found[0], found[1], SUCCESS_WHYS[mode])
            out.append((f"{a.name}_{suffix}", "business_logic", rule, steps, tuple(sorted(found[0].classes))))
    return out


def _at_literals(a: _Action) -> list[ActionTest]:
    """Each `this.x OP literal` guard (OP an ordering) with x exactly at the literal, every other guard holding:
    `>=` and `<=` hold there (200), `>` and `<` do not (409)."""
    action, n = a.action, len(a.action.conditions)
    out: list[ActionTest] = []
    for i, cond in enumerate(action.conditions):
        if not (isinstance(cond, Compare) and isinstance(cond.left, FieldOperand) and cond.op in ORDER):
            continue
        want = compare(cond.value, cond.op, cond.value)
        label = f"{a.name}_guard_{i + 1}_at_literal"
        found = a.plan([want if j == i else True for j in range(n)], pick(a.rng, label, action.sources), {i: "literal"})
        if found is not None:
            verdict = "holds, so 200" if want else "does not hold, so 409"
            why = f"the guard `{condition_phrase(cond)}` with {cond.left.field} exactly {cond.value!r} {verdict}"
            out.append((label, "business_logic", "guards", a.steps(found[0], found[1], why), ("at_literal",)))
    return out


def _cite(step: Step, old: str, new: str) -> Step:
    """`step` with its checks citing rule `new` where they cited `old`."""
    checks = tuple(msgspec.structs.replace(c, rule=new) if getattr(c, "rule", "") == old else c for c in step.checks)
    return msgspec.structs.replace(step, checks=checks)


def _repeats(a: _Action) -> list[ActionTest]:
    """Per list a `count()`/`sum()` guard reads or a `for each` walks: the same call with one id in it twice, where
    counting it once flips a guard, and where it changes what an effect stores."""
    out: list[ActionTest] = []
    for link in read_lists(a.action):
        label = f"{a.name}_{link}_repeated_id"
        found = a.plan([True] * len(a.action.conditions), pick(a.rng, label, a.action.sources))
        field = a.entity.field(link)
        if found is None or field is None:
            continue
        plan = found[0]
        if not plan.body.get(link):  # nothing to repeat yet: two targets to walk or count
            plan.link(a.rng, a.state, field, [{}, {}])
        world = _world(a.state, a.entity, plan)
        for kind, ids in repeated_lists(a.state, a.entity, a.action, world, plan.body["id"], link).items():
            plan.body = {**plan.body, link: ids}  # a new dict: the steps made for the last list hold the old one
            why = f"{link} holds {ids[-1]} more than once: count(), sum() and for each count every occurrence"
            steps = [_cite(s, "effects", "reference-list") for s in a.steps(plan, _world(a.state, a.entity, plan), why)]
            name = label if kind == "held" else f"{label}_{kind}"
            out.append((name, "business_logic", "reference-list", steps, ("repeated_id",)))
    return out


# An action's tests, in the order they draw their data (a new maker goes last, so no other test's data moves).
ACTION_TESTS: tuple[Callable[[_Action], list[ActionTest]], ...] = (
    _unknown_id,
    _wrong_state,
    _guards,
    _successes,
    _at_literals,
    _repeats,
)


def action_tests(state: State, action: Action, rng: random.Random) -> list[ActionTest]:
    """Every test of `action` (ACTION_TESTS in order)."""
    entity = state.entity(action.entity)
    field = entity.field(action.field) if entity else None
    enum = state.enum(field.enum or "") if field else None
    assert entity is not None and enum is not None
    a = _Action(state, entity, action, enum, rng)
    return [test for make in ACTION_TESTS for test in make(a)]


def _guard_class(cond: object, variant: str) -> str:
    """The input class (`computations`) a guard's null, empty or falsy case covers."""
    if variant == "null":
        return "null_list_item" if isinstance(cond, Quantified) else "null_operand"
    return {"empty": "empty_list", "falsy": "falsy_not_null"}[variant]
