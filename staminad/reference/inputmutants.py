"""Mutants of the input classes lenient parsers and set-minded stores let through (`suite.strictinputs`).

Each is what a server written the usual way does: Python's `json.loads` (and so Flask and Starlette)
reads `NaN` and `Infinity` as numbers, `strptime` alone takes `2024-04-10 9:05:7`, a list stored as a
set keeps a repeated id once, `list.remove` drops only its first occurrence, and a PATCH handler that
checks "no fields to update" refuses `{}`, and a guard's comparison is off by its boundary (`>=` written as
`>`, or `>` as `>=`). `mutants` adds them to `MUTANTS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from staminad.bench.changes import Change
from staminad.bench.datetimes import unpadded_probe
from staminad.bench.schema import Field, State
from staminad.reference.exercised import any_guard, at_literal
from staminad.reference.mutant import Mutant, any_field


def _unbounded_float(s: State, c: Sequence[Change]) -> bool:
    """A float field some side of which no bound closes: a non-finite number passes a bounds check there."""
    return any_field(s, lambda f: f.kind == "float" and (f.minimum is None or f.maximum is None))


def _unpadded_fits(f: Field) -> bool:
    return f.kind == "datetime" and unpadded_probe(f.after, f.before) is not None


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
