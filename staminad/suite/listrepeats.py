"""A repeated id in a list that `count()`, `sum()` or `for each` reads, chosen so counting it once shows.

The README says a list of references keeps a repeated id as sent and that everything computed from
the list counts each occurrence. For one action and one list field, `repeated_lists` searches lists
built from a plan's ids (a prefix of them, then one of them again once to three times) for one whose
status differs from that of the same list with the repeats removed (a server counting distinct ids
fails it) and one whose stored entities differ while both succeed (a server walking distinct ids fails
it); where no list differs it still gives one with a repeat, which the class gate counts as exercised.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from staminad.bench.schema import Action, Compare, CountOperand, Entity, ForEach, State, SumOperand
from staminad.suite.semantics import World, apply_action

_MAX_REPEATS = 3


def read_lists(action: Action) -> list[str]:
    """The list fields the action's `count()`/`sum()` guards read or its `for each` effects walk, in order."""
    out = [
        c.left.list_field
        for c in action.conditions
        if isinstance(c, Compare) and isinstance(c.left, CountOperand | SumOperand)
    ]
    out += [x.list_field for x in action.effects if isinstance(x, ForEach)]
    return list(dict.fromkeys(out))


def _candidates(ids: list[str]) -> Iterator[list[str]]:
    for m in range(1, len(ids) + 1):
        for r in range(m):
            for k in range(1, _MAX_REPEATS + 1):
                yield ids[:m] + [ids[r]] * k


def _outcome(world: World, state: State, action: Action, oid: str, link: str) -> tuple[int, World]:
    status, after = apply_action(world, state, action, oid)
    after = copy.deepcopy(after)
    after[action.entity][oid].pop(link, None)  # the list itself differs by construction
    return status, after


def _with_list(world: World, entity: Entity, oid: str, link: str, ids: list[str]) -> World:
    out = copy.deepcopy(world)
    out[entity.name][oid][link] = ids
    return out


def repeated_lists(
    state: State, entity: Entity, action: Action, world: World, oid: str, link: str
) -> dict[str, list[str]]:
    """Lists for `oid`'s `link` holding a repeated id: under "counted", one where counting the repeat once changes
    the status (a `count()` or `sum()` guard flips); under "walked", one where both answer 200 but what is stored
    differs (a `for each` effect applied once too few); where neither exists, one list under "held". Empty when
    the list the plan made is empty (no id to repeat)."""
    ids: list[Any] = list(dict.fromkeys(world[entity.name][oid].get(link) or []))
    found: dict[str, list[str]] = {}
    for cand in _candidates(ids):
        mine = _outcome(_with_list(world, entity, oid, link, cand), state, action, oid, link)
        theirs = _outcome(_with_list(world, entity, oid, link, list(dict.fromkeys(cand))), state, action, oid, link)
        if mine[0] != theirs[0]:
            found.setdefault("counted", cand)
        elif mine != theirs:
            found.setdefault("walked", cand)
        if len(found) == 2:
            break
    first = next(_candidates(ids), None)
    return found or ({"held": first} if first is not None else {})
