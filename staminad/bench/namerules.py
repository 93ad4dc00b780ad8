"""The rules names keep across a whole state, so that a name read in a text never means two things.

Policy (issue 39, "texts an agent trips over"):

- One meaning per field name. A field name has one signature across every entity of a state: the same
  kind, and for an enum field the same enum type, for a reference the same target. (`status` is never an
  enum on one entity and a string on another; `amount` never an integer here and a float there.) The
  generator makes each enum type for one field, so a generated enum field's name is used by no other field.
- No name inside another on one entity. No field name of an entity is a whole-word part of another field
  name of the same entity (`count` and `visit_count` side by side make `this.count` easy to misread).
  Words are the parts between underscores.
- No entity name inside another. No entity name is a whole-word part of another entity's name (`Order`
  and `OrderItem`, endpoints `/order` and `/orderitem`). Words are the CamelCase parts. Names on
  different entities may share words freely (`count` on one entity, `visit_count` on another).

The namer draws only names these rules allow (`FieldRoom`, `nesting`), the changes refuse names that break
them, and `name_problems` (part of `integrity.problems`) checks every state. Before the rules, seeds 0-99 (both
namings, both samplers, 60 turns) held 7,994 distinct nested pairs over all their states (3,175 of field names,
4,819 of entity names) and 20,674 field names with two meanings; now none.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from itertools import compress
from operator import is_not
from typing import Protocol

from staminad.bench.schema import Entity, Field, State

Signature = tuple[str, str | None]


@functools.lru_cache(maxsize=65536)
def word_key(name: str) -> str:
    """The lowercase words of a snake_case or CamelCase name, each between underscores: `_visit_count_`."""
    words: list[str] = []
    for ch in name:
        if ch == "_":
            words.append("")
        elif ch.isupper() or not words:
            words.append(ch.lower())
        else:
            words[-1] += ch
    return "_" + "_".join(w for w in words if w) + "_"


def nested(a: str, b: str) -> bool:
    """One of two different names is a whole-word part of the other (`count` and `visit_count`)."""
    if a == b:
        return False
    ka, kb = word_key(a), word_key(b)
    return ka in kb or kb in ka


def signature(f: Field) -> Signature:
    """What a field name means: its kind, with the enum type or reference target it names."""
    return f.kind, f.enum if f.kind == "enum" else f.target


Meanings = dict[str, dict[Signature, int]]  # field name -> how many fields of the state have each signature
_last: list[tuple[tuple[Entity, ...], Meanings]] = []  # the entities last indexed, and their index


def meanings(state: State) -> Meanings:
    """The signatures every field name of the state has, counted; kept on the (immutable) state.

    A state is mostly its predecessor with one entity replaced or added, so the index is derived from the one
    made last where their entities differ in a few places (the same answer as a fresh count, sooner)."""
    index: Meanings | None = state.__dict__.get("_meanings")
    if index is None:
        index = state.__dict__["_meanings"] = _derived(state.entities)
        _last[:] = [(state.entities, index)]
    return index


def _derived(entities: tuple[Entity, ...]) -> Meanings:
    if _last:
        old, index = _last[0]
        if old is entities:
            return index
        gone, new = _difference(old, entities)
        if len(gone) + len(new) < len(entities) // 2:  # fewer to count again than to count afresh
            out = dict(index)
            for e in gone:
                _count(out, e, -1)
            for e in new:
                _count(out, e, 1)
            return out
    out = {}
    for e in entities:
        _count(out, e, 1)
    return out


def _difference(old: tuple[Entity, ...], entities: tuple[Entity, ...]) -> tuple[list[Entity], list[Entity]]:
    """The entities only `old` holds and those only `entities` holds, compared by identity, in C where it can:
    place by place where none was taken out (the usual case), else by a set of ids."""
    if len(old) <= len(entities):
        changed = list(compress(range(len(old)), map(is_not, old, entities)))
        return [old[i] for i in changed], [entities[i] for i in changed] + list(entities[len(old) :])
    kept = set(map(id, old)).intersection(map(id, entities))
    return [e for e in old if id(e) not in kept], [e for e in entities if id(e) not in kept]


def _count(index: Meanings, e: Entity, step: int) -> None:
    """Add (or, with step -1, take away) the fields of `e`; the inner dicts are copied, never changed in place."""
    for name, sig in _own_signatures(e).items():
        per = dict(index.get(name, {}))
        per[sig] = per.get(sig, 0) + step
        if not per[sig]:
            del per[sig]
        if per:
            index[name] = per
        else:
            index.pop(name, None)


def _own_signatures(e: Entity) -> dict[str, Signature]:
    """The signatures of one entity's fields, kept on the (immutable) entity, which outlives many states."""
    own: dict[str, Signature] | None = e.__dict__.get("_signatures")
    if own is None:
        own = e.__dict__["_signatures"] = {f.name: signature(f) for f in e.fields}
    return own


class FieldRoom:
    """The names a field of one signature may take on one entity: used as the `taken` of a namer, a name
    is "in" the room's taken set when the policy forbids it. `leaving` is a name the change removes (a
    renamed field's old name), which blocks nothing."""

    def __init__(self, state: State, own: Iterable[str], sig: Signature, leaving: str = "") -> None:
        self._meanings = meanings(state)
        self._own = [n for n in own if n != leaving]
        self._nests = nesting(self._own)
        self._leaving = leaving
        self._sig = sig

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in ("id", self._leaving) or name in self._own:
            return True
        if any(m != self._sig for m in self._meanings.get(name, ())):
            return True
        return self._nests(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._own)

    def __len__(self) -> int:
        return len(self._own)


class Nests(Protocol):
    """A test `nesting` makes."""

    def __call__(self, name: str, leaving: str = "") -> bool: ...


@functools.lru_cache(maxsize=65536)
def _words(name: str) -> tuple[str, ...]:
    return tuple(word_key(name).strip("_").split("_"))


def _runs(words: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Every contiguous run of `words` shorter than all of them."""
    n = len(words)
    return (words[i:j] for i in range(n) for j in range(i + 1, n + 1) if j - i < n)


def nesting(names: Iterable[str]) -> Nests:
    """A test of whether a name and one of `names` (other than itself, and other than the name given as
    `leaving`) are one inside the other. It searches one string of all their words and looks the runs of the
    name's words up in a set, so a namer may try many candidates against a large state."""
    whole, joined = _keys(tuple(names))

    def nests(name: str, leaving: str = "") -> bool:
        k = word_key(name)
        inside = joined.count(k) - (k in whole) - (word_key(leaving).count(k) if leaving else 0)
        if inside > 0:
            return True
        gone = word_key(leaving) if leaving else ""
        return any(r in whole and r != gone for r in _run_keys(name))

    return nests


@functools.lru_cache(maxsize=8)
def _keys(names: tuple[str, ...]) -> tuple[frozenset[str], str]:
    """The word keys of the names, as a set and run together; kept for the last few lists (a state's entity
    names are asked about by the namer and by the change it proposes)."""
    keys = list(map(word_key, names))
    return frozenset(keys), "|".join(keys)


@functools.lru_cache(maxsize=65536)
def _run_keys(name: str) -> tuple[str, ...]:
    """The keys of every shorter run of the name's words (`visit_count`: `_visit_`, `_count_`)."""
    return tuple("_" + "_".join(run) + "_" for run in _runs(_words(name)))


def field_name_problem(state: State, entity: Entity, f: Field, leaving: str = "") -> str | None:
    """Why field `f` may not join `entity` in `state` under the policy, or None: one lookup in the state's index
    (`meanings`, derived from the last state indexed, which a replay's previous state is too)."""
    mine = signature(f)
    other = next((m for m, n in meanings(state).get(f.name, {}).items() if n and m != mine), None)
    if other is not None:
        return f"the field name {f.name!r} already names a {other[0]} field"
    clash = next((g.name for g in entity.fields if g.name != leaving and nested(f.name, g.name)), None)
    if clash is not None:
        return f"the field name {f.name!r} and {clash!r} of {entity.name} are one inside the other"
    return None


def name_problems(state: State) -> list[str]:
    """Every break of the policy above in `state`."""
    out: list[str] = []
    seen: dict[str, tuple[str, Signature]] = {}
    for e in state.entities:
        for i, f in enumerate(e.fields):
            owner, sig = seen.setdefault(f.name, (e.name, signature(f)))
            if sig != signature(f):
                out.append(f"field {f.name!r}: {sig} on {owner} but {signature(f)} on {e.name}")
            out += [
                f"{e.name}: field {f.name!r} and {g.name!r} are one inside the other"
                for g in e.fields[i + 1 :]
                if nested(f.name, g.name)
            ]
    keys = sorted(((word_key(e.name), e.name) for e in state.entities), key=lambda k: len(k[0]))
    for i, (key, name) in enumerate(keys):
        out += [f"entity {name} is a whole-word part of {other}" for k, other in keys[i + 1 :] if key in k]
    return out
