"""Mutants of the input classes lenient parsers and set-minded stores let through (`suite.strictinputs`).

Each is what a server written the usual way does: Python's `json.loads` (and so Flask and Starlette)
reads `NaN` and `Infinity` as numbers, `strptime` alone takes `2024-04-10 9:05:7`, a list stored as a
set keeps a repeated id once, `list.remove` drops only its first occurrence, a PATCH handler that checks
"no fields to update" refuses `{}`, a guard's comparison is off by its boundary (`>=` written as `>`, or `>`
as `>=`), and a PATCH keeps checking the bounds a field had before a change. `mutants` adds them to `MUTANTS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from staminad.bench.changes import Change, ChangeConstraints, transition
from staminad.bench.datetimes import unpadded_probe
from staminad.bench.schema import Compare, CountOperand, Field, ForEach, Increment, State
from staminad.bench.values import rebound_probes
from staminad.reference.exercised import actions, any_guard, at_literal, compare, others_hold
from staminad.reference.mutant import Mutant, any_field, carried


def _unbounded_float(s: State, c: Sequence[Change]) -> bool:
    """A float field some side of which no bound closes: a non-finite number passes a bounds check there."""
    return any_field(s, lambda f: f.kind == "float" and (f.minimum is None or f.maximum is None))


def _unpadded_fits(f: Field) -> bool:
    return f.kind == "datetime" and unpadded_probe(f.after, f.before) is not None


def _count_shows_repeat(c: object) -> bool:
    """`count(this.items) OP v` where one to three repeats of an id cross v from some count of 1 to 4."""
    if not (isinstance(c, Compare) and isinstance(c.left, CountOperand)):
        return False
    return any(compare(m + k, c.op, c.value) != compare(m, c.op, c.value) for m in range(1, 5) for k in range(1, 4))


def _repeat_counted(s: State, c: Sequence[Change]) -> bool:
    return any(others_hold(s, e, a) and any(map(_count_shows_repeat, a.conditions)) for a, e in actions(s))


def _repeat_walked(s: State, c: Sequence[Change]) -> bool:
    return any(
        others_hold(s, e, a)
        and any(isinstance(x, ForEach) and isinstance(x.effect, Increment) and x.effect.amount for x in a.effects)
        for a, e in actions(s)
    )


def _rebound_shows(before: State, after: State, changes: Sequence[Change]) -> bool:
    """A change of bounds this turn, still in effect at its end, with a value it made valid or invalid."""
    cur = before
    for i, c in enumerate(changes):
        old_entity = cur.entity(c.entity) if isinstance(c, ChangeConstraints) else None
        old = old_entity.field(c.field) if isinstance(c, ChangeConstraints) and old_entity else None
        at = carried(c.entity, c.field, changes[i + 1 :]) if isinstance(c, ChangeConstraints) else None
        e = after.entity(at[0]) if at else None
        new = e.field(at[1]) if e is not None and at and at[1] else None
        if old is not None and new is not None and rebound_probes(after, old, new) != (None, None):
            return True
        cur = transition(cur, [c])
    return False


INPUT_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "non-finite-accepted",
        "types",
        "validation",
        "parses NaN and Infinity as numbers, as Python's json.loads does by default",
        _unbounded_float,
    ),
    Mutant(
        "strptime-dates",
        "datetime",
        "validation",
        "checks datetimes with strptime alone, which takes `9:05:7` for `09:05:07`",
        lambda s, c: any_field(s, _unpadded_fits),
    ),
    Mutant(
        "ref-list-deduped",
        "reference-list",
        "validation",
        "stores a list of references as a set: a repeated id is kept once",
        lambda s, c: any_field(s, lambda f: f.kind == "ref_list"),
    ),
    Mutant(
        "cascade-drops-one",
        "cascade",
        "cascade_deletion",
        "drops only the first occurrence of a deleted id from a list (`list.remove`)",
        lambda s, c: any_field(s, lambda f: f.kind == "ref_list"),
    ),
    Mutant(
        "empty-patch-rejected",
        "update",
        "validation",
        "answers 400 to a PATCH holding no current field (`{}`)",
        lambda s, c: bool(s.entities),
    ),
    Mutant(
        "count-distinct",
        "reference-list",
        "business_logic",
        "counts the distinct ids of a list in `count()` (`len(set(...))`, `COUNT(DISTINCT ...)`)",
        _repeat_counted,
    ),
    Mutant(
        "for-each-distinct",
        "reference-list",
        "business_logic",
        "applies a `for each` effect once per distinct id (`WHERE id IN (...)`)",
        _repeat_walked,
    ),
    Mutant(
        "patch-stale-bounds",
        "update",
        "validation",
        "validates a PATCH by a field's bounds before they changed (a second, stale copy of the checks)",
        lambda s, c: False,
        _rebound_shows,
    ),
    Mutant(
        "guard-at-literal-fails",
        "guards",
        "business_logic",
        "evaluates a guard's `>=` and `<=` as `>` and `<`",
        lambda s, c: any_guard(s, at_literal(frozenset((">=", "<=")))),
    ),
    Mutant(
        "guard-at-literal-holds",
        "guards",
        "business_logic",
        "evaluates a guard's `>` and `<` as `>=` and `<=`",
        lambda s, c: any_guard(s, at_literal(frozenset((">", "<")))),
    ),
)
