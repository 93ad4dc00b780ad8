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
)
from staminad.bench.schema import Condition, Effect, State

Removed = tuple[tuple[tuple[str, str, Condition], ...], tuple[tuple[str, str, Effect], ...]]


def removed_items(changes: Sequence[Change], after: State) -> Removed:
    """(entity, action, guard) and (entity, action, effect) removed by `changes`, as of `after`."""
    items: list[tuple[list[str], RemoveCondition | RemoveEffect]] = []
    for change in changes:
        if isinstance(change, RemoveCondition | RemoveEffect):
            items.append(([change.entity, change.action], change))
        elif isinstance(change, RenameEntity):
            for at, _ in items:
                if at[0] == change.old:
                    at[0] = change.new
    guards: list[tuple[str, str, Condition]] = []
    effects: list[tuple[str, str, Effect]] = []
    for (entity, action), change in items:
        a = after.action(entity, action)
        if a is None:
            continue
        try:
            if isinstance(change, RemoveCondition):
                AddCondition(entity=entity, action=action, condition=change.condition).validate(after)
                guards.append((entity, action, change.condition))
            else:
                AddEffect(entity=entity, action=action, effect=change.effect).validate(after)
                effects.append((entity, action, change.effect))
        except ChangeError:
            continue
    return tuple(dict.fromkeys(guards)), tuple(dict.fromkeys(effects))
