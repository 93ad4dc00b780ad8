"""What the current turn's state no longer has: the paths and names tests must find gone.

Retired endpoints accumulate over the whole trajectory (an old endpoint answering again later is
a regression); removed fields, analytics, actions, guards and effects are those of the current turn's changes,
whether a change names them or they follow from it (a deleted field's analytics, a rename's old
paths, the reference fields of a deleted entity).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from staminad.bench.changes import (
    Change,
    ChangeConstraints,
    DeleteEntity,
    DeleteField,
    RenameEntity,
    RenameField,
    transition,
)
from staminad.bench.removed import removed_items
from staminad.bench.scenario import Scenario
from staminad.bench.schema import Analytics, Condition, Effect, Field, State, endpoint_of


class History(msgspec.Struct, frozen=True, kw_only=True):
    retired_endpoints: tuple[str, ...] = ()  # (entity endpoint) gone for good
    removed_fields: tuple[tuple[str, str, str], ...] = ()  # (entity, field, "deleted"|"renamed"|"dropped")
    removed_analytics: tuple[str, ...] = ()  # paths
    removed_actions: tuple[tuple[str, str], ...] = ()  # (entity, action)
    renamed_targets: tuple[tuple[str, str], ...] = ()  # (entity, ref field) whose target was renamed this turn
    renamed_fields: tuple[tuple[str, str, str], ...] = ()  # (entity, old field, its current name) renamed this turn
    removed_guards: tuple[tuple[str, str, Condition], ...] = ()  # (entity, action, guard) removed this turn
    removed_effects: tuple[tuple[str, str, Effect, int], ...] = ()  # (entity, action, effect, its index) removed
    rebounded: tuple[tuple[str, str, Field], ...] = ()  # (entity, field, the field before) whose bounds changed


class _Removed:
    """What a turn's changes took away, replayed one change at a time (see `turn_history`)."""

    def __init__(self, previous: History | None) -> None:
        self.retired = set(previous.retired_endpoints if previous else ())
        # Names recorded during the turn are carried forward through later renames in the same turn, in
        # order (a rename A->B then B->A is legal, so no name can be resolved by following a mapping).
        self.fields: list[list[str]] = []  # [entity, field, "deleted"|"renamed"|"dropped"]
        self.analytics: list[list[str | None]] = []  # [entity, field, op, path when removed]
        self.actions: list[list[str]] = []  # [entity, action]
        self.renamed: list[list[str]] = []  # [entity]
        self.moves: list[list[str]] = []  # [entity, old field, current name]
        self.rebounds: list[list[Any]] = []  # [entity, field, the field before the turn changed its bounds]

    def follow(self, change: Change) -> None:
        """Carry the names recorded so far through `change`'s renames, and retire the endpoints it ends."""
        match change:
            case RenameEntity(old=old, new=new):
                self.retired.add(endpoint_of(old))
                for record in (*self.fields, *self.actions, *self.renamed, *self.moves, *self.rebounds):
                    if record[0] == old:
                        record[0] = new
                for arecord in self.analytics:
                    if arecord[0] == old:
                        arecord[0] = new
                self.renamed.append([new])
            case RenameField(entity=entity, old=old, new=new):
                for move in self.moves:
                    if move[0] == entity and move[2] == old:
                        move[2] = new
                self.moves.append([entity, old, new])
                self._rename_rebound(entity, old, new)
                for arecord in self.analytics:
                    if arecord[0] == entity and arecord[1] == old:
                        arecord[1] = new
            case DeleteEntity(name=name):
                self.retired.add(endpoint_of(name))
            case ChangeConstraints(entity=entity, field=field):
                if not any(rb[0] == entity and rb[1] == field for rb in self.rebounds):  # the bounds before the turn
                    self.rebounds.append([entity, field, None])

    def _rename_rebound(self, entity: str, old: str, new: str) -> None:
        for rb in self.rebounds:
            if rb[0] == entity and rb[1] == old:
                rb[1] = new

    def before_bounds(self, cur: State) -> None:
        """Fill in the field as it was just before a bounds change recorded by `follow`."""
        for rb in self.rebounds:
            e = cur.entity(rb[0]) if rb[2] is None else None
            rb[2] = e.field(rb[1]) if e is not None else rb[2]

    def compare(self, change: Change, cur: State, nxt: State) -> None:
        """Record what is in `cur` and gone from `nxt`: fields (by why they went), analytics and actions."""
        why = {DeleteField: "deleted", RenameField: "renamed", DeleteEntity: "dropped"}.get(type(change))
        for owner in cur.entities:
            kept = nxt.entity(owner.name)
            if why and kept is not None:
                self.fields += [[owner.name, f.name, why] for f in owner.fields if kept.field(f.name) is None]
        self.analytics += [[a.entity, a.field, a.op, a.path()] for a in cur.analytics if a not in nxt.analytics]
        self.actions += [
            [a.entity, a.name]
            for a in cur.actions
            if nxt.action(a.entity, a.name) is None and nxt.entity(a.entity) is not None
        ]


def turn_history(previous: History | None, before: State, changes: Sequence[Change], after: State) -> History:
    """The history at a turn, from the previous turn's history and this turn's changes.

    Removals are found by replaying the batch one change at a time and comparing the states around
    each change, so what a change takes with it (the analytics and actions of a deleted field, the
    reference fields of a deleted entity, the old paths a rename moves) is recorded as well as what
    it names.
    """
    removed, cur = _Removed(previous), before
    for change in changes:
        nxt = transition(cur, [change])
        removed.follow(change)
        removed.before_bounds(cur)
        removed.compare(change, cur, nxt)
        cur = nxt
    return _history(removed, before, changes, after)


def _gone_paths(removed: _Removed, after: State) -> list[str]:
    paths: list[str] = []
    for a_entity, a_field, op, path in removed.analytics:
        assert a_entity is not None and op is not None and path is not None
        paths.append(path)  # where it was when it went, and where a server that kept it would have moved it
        if after.entity(a_entity) is not None:
            paths.append(Analytics(entity=a_entity, op=op, field=a_field).path())  # type: ignore[arg-type]
    return paths


def _history(removed: _Removed, before: State, changes: Sequence[Change], after: State) -> History:
    """The turn's History: what `removed` recorded that is still gone from `after`."""
    current = {e.endpoint for e in after.entities}
    live_paths = {a.path() for a in after.analytics}
    kept_fields = []
    for entity, field, why in removed.fields:
        e = after.entity(entity)
        if e is not None and e.field(field) is None:
            kept_fields.append((e.name, field, why))
    kept_actions = [(e, a) for e, a in removed.actions if after.entity(e) and not after.action(e, a)]
    renamed_final = {r[0] for r in removed.renamed}
    targets = [(e.name, f.name) for e in after.entities for f in e.fields if f.target in renamed_final]
    guards, effects = removed_items(before, changes, after)
    return History(
        retired_endpoints=tuple(sorted(removed.retired - current)),
        removed_fields=tuple(dict.fromkeys(kept_fields)),
        removed_analytics=tuple(p for p in dict.fromkeys(_gone_paths(removed, after)) if p not in live_paths),
        removed_actions=tuple(dict.fromkeys(kept_actions)),
        renamed_targets=tuple(targets),
        renamed_fields=tuple(
            (e.name, old, new)
            for entity, old, new in removed.moves
            if (e := after.entity(entity)) is not None and e.field(new) is not None and e.field(old) is None
        ),
        removed_guards=guards,
        removed_effects=effects,
        rebounded=tuple(_rebounded(removed, after)),
    )


def _rebounded(removed: _Removed, after: State) -> list[tuple[str, str, Field]]:
    """The bounds changes still in effect at the end of the turn: the field there, of the same kind, with other
    bounds than before."""
    out = []
    for entity, field, old in removed.rebounds:
        e = after.entity(entity)
        f = e.field(field) if e is not None else None
        if f is not None and old is not None and f.kind == old.kind and _bounds(f) != _bounds(old):
            out.append((entity, field, old))
    return out


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


def _bounds(f: Field) -> tuple[object, ...]:
    return (f.minimum, f.maximum, f.min_length, f.max_length, f.after, f.before)
