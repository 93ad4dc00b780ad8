"""The catalogue of mutants: the reference agent with one seeded bug, and what must catch it.

Each entry names the failure category the suite must report for it and a predicate saying
whether a turn can exercise the bug at all (a design without datetime fields cannot reveal a
calendar bug), so `validate` never counts an untestable bug as missed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from staminad.bench.changes import AddField, Change, RenameEntity
from staminad.bench.schema import ForEach, OnReference, State


@dataclass(frozen=True)
class Mutant:
    bug: str
    rule: str  # the README rule id (`bench.readme.RULES`) the bug breaks, and only that rule
    category: str
    description: str
    exercised: Callable[[State, Sequence[Change]], bool]


def _fields(s: State, pred: Callable[..., bool]) -> bool:
    return any(pred(f) for e in s.entities for f in e.fields)


def _analytics(s: State, ops: set[str]) -> bool:
    return any(a.op in ops for a in s.analytics)


def _wrong_state_possible(s: State) -> bool:
    for a in s.actions:
        e = s.entity(a.entity)
        f = e.field(a.field) if e else None
        en = s.enum(f.enum or "") if f else None
        if en and any(v not in a.sources for v in en.values):
            return True
    return False


def _rename_leaks(s: State, changes: Sequence[Change]) -> bool:
    from staminad.reference.agent import _snake

    for c in changes:
        if isinstance(c, RenameEntity) and any(
                f.target == c.new and _snake(c.old) in f.name for e in s.entities for f in e.fields):
            return True
    return False


MUTANTS: tuple[Mutant, ...] = (
    Mutant("accept-null", "null", "validation", "accepts null for non-nullable fields",
           lambda s, c: _fields(s, lambda f: not f.nullable and f.kind != "ref_list")),
    Mutant("default-required", "default", "default_value", "treats a field with a default as required",
           lambda s, c: _fields(s, lambda f: f.has_default)),
    Mutant("no-cascade", "cascade", "cascade_deletion", "does not update references when their target is deleted",
           lambda s, c: _fields(s, lambda f: f.target is not None)),
    Mutant("rename-leak", "rename-entity", "rename",
           "an entity rename also renames other entities' fields named after it",
           _rename_leaks),
    Mutant("old-endpoint-alive", "rename-entity", "regression",
           "keeps answering on an entity's old endpoint after a rename",
           lambda s, c: any(isinstance(x, RenameEntity) for x in c)),
    Mutant("rounded-avg", "analytics", "type_error", "rounds averages to two decimals",
           lambda s, c: _analytics(s, {"avg"})),
    Mutant("zero-for-empty", "analytics", "wrong_response_format", "returns 0 instead of null for empty min/max/avg",
           lambda s, c: _analytics(s, {"avg", "min", "max"})),
    Mutant("wrong-state-422", "actions", "wrong_response_format", "answers 422 instead of 400 for a wrong-state action",
           lambda s, c: _wrong_state_possible(s)),
    Mutant("swap-400-409", "actions", "wrong_response_format", "swaps 400 (wrong state) and 409 (unmet guard)",
           lambda s, c: _wrong_state_possible(s) or any(a.conditions for a in s.actions)),
    Mutant("no-ref-effects", "effects", "business_logic", "skips effects on referenced and listed entities",
           lambda s, c: any(isinstance(x, OnReference | ForEach) for a in s.actions for x in a.effects)),
    Mutant("ignore-add_field", "spec-file", "missing_feature", "silently ignores every add-field change",
           lambda s, c: any(isinstance(x, AddField) for x in c)),
    Mutant("500-on-wrong-type", "types", "server_crash", "crashes (500) on a value of the wrong type",
           lambda s, c: bool(s.entities)),
    Mutant("case-insensitive-enums", "enum", "enum_handling", "matches enum values case-insensitively",
           lambda s, c: _fields(s, lambda f: f.kind == "enum")),
    Mutant("exclusive-bounds", "range", "validation", "treats numeric bounds as exclusive",
           lambda s, c: _fields(s, lambda f: f.minimum is not None or f.maximum is not None)),
    Mutant("invalid-calendar", "datetime", "validation", "accepts impossible calendar dates such as 2023-02-30",
           lambda s, c: _fields(s, lambda f: f.kind == "datetime")),
    Mutant("patch-rejects-id", "patch-id", "validation", "rejects a PATCH that repeats the unchanged id",
           lambda s, c: bool(s.entities)),
)
MUTANT_BY_BUG = {m.bug: m for m in MUTANTS}
