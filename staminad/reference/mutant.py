"""A mutant: the reference agent with one seeded bug, the rule whose tests must catch it, and when a turn can
exercise it; with the predicates both halves of the catalogue use."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from staminad.bench.changes import (
    AddField,
    Change,
    DeleteEntity,
    DeleteField,
    RenameEntity,
    RenameField,
)
from staminad.bench.schema import State


@dataclass(frozen=True)
class Mutant:
    bug: str
    rule: str  # the README rule id (`bench.readme.RULES`) the bug breaks, and only that rule
    category: str
    description: str
    exercised: Callable[[State, Sequence[Change]], bool]
    # For bugs a removal reveals: also exercised at a turn where this holds of (before, after, changes).
    removal: Callable[[State, State, Sequence[Change]], bool] | None = None


def any_field(s: State, pred: Callable[..., bool]) -> bool:
    return any(pred(f) for e in s.entities for f in e.fields)


def carried(entity: str, field: str | None, later: Sequence[Change]) -> tuple[str, str | None] | None:
    """An (entity, field) name after the rest of a batch: renamed along, None once deleted."""
    for c in later:
        match c:
            case RenameEntity(old=old, new=new) if old == entity:
                entity = new
            case RenameField(entity=e, old=old, new=new) if e == entity and old == field:
                field = new
            case DeleteEntity(name=name) if name == entity:
                return None
            case DeleteField(entity=e, field=f) if e == entity and f == field:
                return None
    return entity, field


def added_field_survives(s: State, changes: Sequence[Change]) -> bool:
    """A field added this turn is still there at the end of the batch (under its name then)."""
    for i, c in enumerate(changes):
        at = carried(c.entity, c.field.name, changes[i + 1 :]) if isinstance(c, AddField) else None
        e = s.entity(at[0]) if at else None
        if at and e is not None and at[1] is not None and e.field(at[1]) is not None:
            return True
    return False
