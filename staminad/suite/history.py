"""What the current turn's state no longer has: the paths and names tests must find gone.

Retired endpoints accumulate over the whole trajectory (an old endpoint answering again later is
a regression); removed fields, analytics and actions are those of the current turn's changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from staminad.bench.changes import (
    Change,
    DeleteAnalytics,
    DeleteEntity,
    DeleteField,
    RemoveAction,
    RenameEntity,
    RenameField,
    transition,
)
from staminad.bench.scenario import Scenario
from staminad.bench.schema import State, endpoint_of


class History(msgspec.Struct, frozen=True, kw_only=True):
    retired_endpoints: tuple[str, ...] = ()  # (entity endpoint) gone for good
    removed_fields: tuple[tuple[str, str, str], ...] = ()  # (entity, field, "deleted"|"renamed")
    removed_analytics: tuple[str, ...] = ()  # paths
    removed_actions: tuple[tuple[str, str], ...] = ()  # (entity, action)
    renamed_targets: tuple[tuple[str, str], ...] = ()  # (entity, ref field) whose target was renamed this turn


def turn_history(previous: History | None, before: State, changes: Sequence[Change], after: State) -> History:
    """The history at a turn, from the previous turn's history and this turn's changes."""
    retired = set(previous.retired_endpoints if previous else ())
    # Names recorded during the turn are carried forward through later renames in the same turn, in
    # order (a rename A->B then B->A is legal, so no name can be resolved by following a mapping).
    fields: list[list[str]] = []  # [entity, field, "deleted"|"renamed"]
    analytics: list[str] = []
    actions: list[list[str]] = []  # [entity, action]
    renamed: list[list[str]] = []  # [entity]
    for change in changes:
        match change:
            case RenameEntity(old=old, new=new):
                retired.add(endpoint_of(old))
                for record in (*fields, *actions, *renamed):
                    if record[0] == old:
                        record[0] = new
                renamed.append([new])
            case DeleteEntity(name=name):
                retired.add(endpoint_of(name))
            case DeleteField(entity=entity, field=field):
                fields.append([entity, field, "deleted"])
            case RenameField(entity=entity, old=old):
                fields.append([entity, old, "renamed"])
            case DeleteAnalytics(analytics=a):
                analytics.append(a.path())
            case RemoveAction(entity=entity, name=name):
                actions.append([entity, name])
    current = {e.endpoint for e in after.entities}
    live_paths = {a.path() for a in after.analytics}
    kept_fields = []
    for entity, field, why in fields:
        e = after.entity(entity)
        if e is not None and e.field(field) is None:
            kept_fields.append((e.name, field, why))
    kept_actions = [(e, a) for e, a in actions if after.entity(e) and not after.action(e, a)]
    renamed_final = {r[0] for r in renamed}
    targets = [(e.name, f.name) for e in after.entities for f in e.fields if f.target in renamed_final]
    return History(
        retired_endpoints=tuple(sorted(retired - current)),
        removed_fields=tuple(dict.fromkeys(kept_fields)),
        removed_analytics=tuple(p for p in dict.fromkeys(analytics) if p not in live_paths),
        removed_actions=tuple(dict.fromkeys(kept_actions)),
        renamed_targets=tuple(targets),
    )


def state_and_history(scenario: Scenario, turn: int) -> tuple[State, History | None]:
    """s_t and the history the suite of turn t needs, replayed from the scenario."""
    if not 0 <= turn <= len(scenario.turns):
        raise ValueError(f"turn {turn} is outside 0..{len(scenario.turns)}")
    state, history = scenario.initial, None
    for batch in scenario.turns[:turn]:
        after = transition(state, batch)
        history = turn_history(history, state, batch, after)
        state = after
    return state, history
