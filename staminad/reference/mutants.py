"""The catalogue of mutants: the reference agent with one seeded bug, and what must catch it.

Each entry names the failure category the suite must report for it and a predicate saying
whether a turn can exercise the bug at all (a design without datetime fields cannot reveal a
calendar bug), so `validate` never counts an untestable bug as missed.
"""

from __future__ import annotations

from staminad.reference.crudmutants import CRUD_MUTANTS
from staminad.reference.inputmutants import INPUT_MUTANTS
from staminad.reference.logicmutants import LOGIC_MUTANTS
from staminad.reference.mutant import Mutant
from staminad.reference.nullmutants import SPECS

# In this order: `validate` lists the mutants as the catalogue orders them.
MUTANTS: tuple[Mutant, ...] = (
    *LOGIC_MUTANTS,
    *CRUD_MUTANTS,
    *(Mutant(*spec) for spec in SPECS),  # null and empty inputs of computations, a removal
    *INPUT_MUTANTS,
)
MUTANT_BY_BUG = {m.bug: m for m in MUTANTS}
