"""The input classes of computations: guards, effects and analytics meeting null inputs and empty lists.

The README gives each computation a rule for a null input or an empty list (a guard with a null
operand does not hold, `all of` holds for no entities, `sum` of none is 0 and `count` 0, an increase
or a computation with a null input changes nothing, its own target included, while one whose target
alone is null stores its result, an effect on a null reference or an empty list reaches nothing, an
analytics endpoint skips nulls). Each class here says, from the schema alone, when some computation
of the state can meet such an input while the action can still succeed (its other guards can hold);
the action and analytics tests name the classes their data reach (`Plan.classes`, the labels in
`actions`, `computedata` and `aggregates`), and `classes.applicable` adds these cells to the
coverage gate, so a computation's null and empty cases are tested at the first turn it exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from staminad.bench.schema import (
    Action,
    ArithOperand,
    Compare,
    Compute,
    Condition,
    CountOperand,
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
)
from staminad.reference.exercised import ORDER, actions, any_guard, at_literal, guarded, others_hold
from staminad.suite.computedata import empty_allowed, null_target_free
from staminad.suite.listrepeats import read_lists
from staminad.suite.plans import can_be_null, falsy_value
from staminad.suite.semantics import compare


@dataclass(frozen=True)
class ComputationClass:
    rule: str
    name: str
    text: str
    when: Callable[[State], bool]


def _guards(state: State) -> Iterator[tuple[Entity, Condition]]:
    """Each guard of an action whose other guards can hold (so failing this one alone shows)."""
    for a, e in actions(state):
        for i, c in enumerate(a.conditions):
            if others_hold(state, e, a, i):
                yield e, c


def _linked(state: State, e: Entity, link: str, name: str) -> bool:
    """The field `name` of the entities `link` references can be null."""
    f = e.field(link)
    t = state.entity(f.target or "") if f else None
    g = t.field(name) if t else None
    return g is not None and can_be_null(g)


def _null_operand(state: State) -> bool:
    for e, c in _guards(state):
        if isinstance(c, Compare) and isinstance(c.left, FieldOperand):
            f = e.field(c.left.field)
            if f is not None and can_be_null(f):
                return True
        if isinstance(c, Compare) and isinstance(c.left, ArithOperand):
            fa, fb = e.field(c.left.left), e.field(c.left.right)
            if (fa is not None and can_be_null(fa)) or (fb is not None and can_be_null(fb)):
                return True
    return False


def _null_list_item(state: State) -> bool:
    return any(isinstance(c, Quantified) and _linked(state, e, c.list_field, c.field) for e, c in _guards(state))


def _empty_guard_list(state: State) -> bool:
    return any(
        isinstance(c, Quantified)
        or (isinstance(c, Compare) and isinstance(c.left, SumOperand) and compare(0, c.op, c.value))
        or (isinstance(c, Compare) and isinstance(c.left, CountOperand))
        for _, c in _guards(state)
    )


def _falsy(state: State) -> bool:
    for e, c in _guards(state):
        f = e.field(c.field) if isinstance(c, NullCheck) else None
        if f is not None and f.kind != "ref" and falsy_value(state, f) is not None:
            return True
    return False


def _effects(state: State) -> Iterator[tuple[Action, Entity]]:
    """Actions whose guards can all hold, so their effects run."""
    for a, e in actions(state):
        if others_hold(state, e, a):
            yield a, e


def _own_null(state: State, kind: type, e: Entity, a: Action) -> bool:
    """An effect of `kind` writes an own field the guards leave free and that can be null."""
    for x in a.effects:
        f = e.field(x.field) if isinstance(x, kind) and isinstance(x, Increment | SetValue) else None
        if f is not None and f.name not in guarded(a) and f.name != a.field and can_be_null(f):
            return True
    return False


def _reached_null(state: State, kind: type, e: Entity, a: Action) -> bool:
    """An effect of `kind` on a referenced or listed entity, over a link the guards leave free, writes a field
    that can be null."""
    for x in a.effects:
        if isinstance(x, OnReference | ForEach) and isinstance(x.effect, kind):
            link = x.ref_field if isinstance(x, OnReference) else x.list_field
            if link not in guarded(a) and _linked(state, e, link, x.effect.field):
                return True
    return False


def _null_input(kind: type) -> Callable[[State], bool]:
    return lambda s: any(_own_null(s, kind, e, a) or _reached_null(s, kind, e, a) for a, e in _effects(s))


def _null_compute_operand(state: State) -> bool:
    for a, e in _effects(state):
        for x in a.effects:
            if not isinstance(x, Compute):
                continue
            for o in (x.left, x.right):
                f = e.field(o)
                if o != x.field and o not in guarded(a) and f is not None and can_be_null(f):
                    return True
    return False


def _null_compute_target(state: State) -> bool:
    return any(
        isinstance(x, Compute) and null_target_free(a, e, x.field) for a, e in _effects(state) for x in a.effects
    )


def _free_link(kind: type) -> Callable[[State], bool]:
    """An effect of `kind` follows a link that can be empty: `on the referenced T` a reference the guards leave
    free, `for each` a list that no guard reads or every guard reading it holds for an empty one."""

    def when(state: State) -> bool:
        for a, _ in _effects(state):
            for x in a.effects:
                if isinstance(x, OnReference) and kind is OnReference and x.ref_field not in guarded(a):
                    return True
                if isinstance(x, ForEach) and kind is ForEach and empty_allowed(a, x.list_field):
                    return True
        return False

    return when


def _repeat_read(state: State) -> bool:
    """An action whose guards can all hold reads a list with `count()` or `sum()`, or walks it with `for each`."""
    return any(read_lists(a) for a, _ in _effects(state))


def _any_analytics(state: State) -> bool:
    return bool(state.analytics)


def _nullable_analytics(state: State) -> bool:
    for an in state.analytics:
        e = state.entity(an.entity)
        f = e.field(an.field) if e and an.field else None
        if f is not None and can_be_null(f):
            return True
    return False


COMPUTATION_CLASSES: tuple[ComputationClass, ...] = (
    ComputationClass(
        "guards", "null_operand", "a compared field, or an operand of a computed one, is null", _null_operand
    ),
    ComputationClass("guards", "null_list_item", "a listed entity's compared field is null", _null_list_item),
    ComputationClass("guards", "empty_list", "`any of`, `all of` or `sum(...)` over an empty list", _empty_guard_list),
    ComputationClass("guards", "falsy_not_null", 'false, 0 or "" in a null-checked field', _falsy),
    ComputationClass(
        "guards",
        "at_literal",
        "a field exactly at the literal of `>=`, `<=`, `>` or `<`",
        lambda s: any_guard(s, at_literal(frozenset(ORDER))),
    ),
    ComputationClass(
        "effects", "null_increase", "the field an increase or decrease reads is null", _null_input(Increment)
    ),
    ComputationClass(
        "effects", "set_from_null", "the field `set ... to ...` writes is null before", _null_input(SetValue)
    ),
    ComputationClass(
        "effects", "null_operand", "an operand of `set this.x to this.a op this.b` is null", _null_compute_operand
    ),
    ComputationClass(
        "effects",
        "null_target",
        "the field `set this.x to this.a op this.b` writes is null before",
        _null_compute_target,
    ),
    ComputationClass(
        "effects", "null_reference", "the reference `on the referenced T` follows is null", _free_link(OnReference)
    ),
    ComputationClass("effects", "empty_list", "the list `for each` walks is empty", _free_link(ForEach)),
    ComputationClass(
        "reference-list",
        "repeated_id",
        "an id twice in a list `count()`, `sum()` or `for each` reads",
        _repeat_read,
    ),
    ComputationClass("analytics", "empty", "no entities at all", _any_analytics),
    ComputationClass("analytics", "null_skipped", "a null value among several", _nullable_analytics),
    ComputationClass("analytics", "all_null", "entities whose values are all null", _nullable_analytics),
)
