"""The guards and effects a turn removed that a test can still state at its end.

A removed guard or effect is followed through the batch's later entity renames; it is kept when its
action survives without it and it is still well-typed at the end of the turn (a later rename or
deletion that touched its fields leaves nothing a test could build on).
"""

from __future__ import annotations

from collections.abc import Sequence

from staminad.bench.changes import (
    AddCondition,
    AddEffect,
    Change,
    ChangeError,
    RemoveCondition,
    RemoveEffect,
    RenameEntity,
    RenameField,
    transition,
)
from staminad.bench.parts import condition_fields
from staminad.bench.schema import (
    ArithOperand,
    Compare,
    Compute,
    Condition,
    Effect,
    FieldOperand,
    Increment,
    NullCheck,
    SetValue,
    State,
)

Removed = tuple[tuple[tuple[str, str, Condition], ...], tuple[tuple[str, str, Effect, int], ...]]


def removed_items(before: State, changes: Sequence[Change], after: State) -> Removed:
    """(entity, action, guard) and (entity, action, effect, its index among the action's effects before the
    removal) removed by `changes`, as of `after`."""
    items = _tracked(before, changes)
    guards: list[tuple[str, str, Condition]] = []
    effects: list[tuple[str, str, Effect, int]] = []
    for (entity, action), change, index in items:
        a = after.action(entity, action)
        if a is None:
            continue
        try:
            if isinstance(change, RemoveCondition):
                AddCondition(entity=entity, action=action, condition=change.condition).validate(after)
                guards.append((entity, action, change.condition))
            else:
                AddEffect(entity=entity, action=action, effect=change.effect).validate(after)
                effects.append((entity, action, change.effect, index))
        except ChangeError:
            continue
    return tuple(dict.fromkeys(guards)), tuple(dict.fromkeys(effects))


def shadowed(effects: Sequence[Effect], effect: Effect, index: int) -> bool:
    """Whether the effects from `index` on would overwrite what `effect`, run at `index`, did to its own field
    whatever the data (a later set of the field, or a computation of it that does not read it or reads only
    it): a removed effect that no data can show."""
    if not isinstance(effect, SetValue | Increment | Compute):
        return False
    for x in effects[index:]:
        if isinstance(x, SetValue) and x.field == effect.field:
            return True
        if (
            isinstance(x, Compute)
            and x.field == effect.field
            and (x.field not in (x.left, x.right) or x.left == x.right)
        ):
            return True
    return False


def _tracked(before: State, changes: Sequence[Change]) -> list[tuple[list[str], RemoveCondition | RemoveEffect, int]]:
    """Each removal of a guard or effect with [entity, action] as of the end of the batch, and an effect's index."""
    items: list[tuple[list[str], RemoveCondition | RemoveEffect, int]] = []
    cur = before
    for change in changes:
        if isinstance(change, RemoveCondition):
            items.append(([change.entity, change.action], change, 0))
        elif isinstance(change, RemoveEffect):
            a = cur.action(change.entity, change.action)
            items.append(([change.entity, change.action], change, a.effects.index(change.effect) if a else 0))
        elif isinstance(change, RenameEntity):
            for at, _, _ in items:
                if at[0] == change.old:
                    at[0] = change.new
        cur = transition(cur, [change])
    return items


def stale_guard_refuses(before: State, changes: Sequence[Change], after: State) -> bool:
    """A guard removed this turn whose fields a later change of the batch deleted (renamed ones aside), of a kind a
    missing value fails (a comparison, `is not null`): a server that kept it refuses every call of its action."""
    renamed = {c.old for c in changes if isinstance(c, RenameField)}
    for (entity, action), change, _ in _tracked(before, changes):
        e = after.entity(entity)
        if not isinstance(change, RemoveCondition) or e is None or after.action(entity, action) is None:
            continue
        guard, fields = change.condition, condition_fields(change.condition)
        refuses = isinstance(guard, Compare) and isinstance(guard.left, FieldOperand | ArithOperand)
        refuses = refuses or (isinstance(guard, NullCheck) and not guard.is_null)
        if refuses and not fields & renamed and any(e.field(f) is None for f in fields):
            return True
    return False
