"""The input-class catalogue: every README rule x class that applies is exercised at its first turn."""

from __future__ import annotations

import pytest

from staminad.bench.readme import RULES
from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.classes import CATALOGUE, FIELD_CLASSES
from staminad.validate import class_coverage, class_gate, render_class_gate


def _gate(seeds: range, turns: int) -> str:
    gate = class_gate(class_coverage([generate(s, ScenarioParams(turns=turns)) for s in seeds], 1))
    assert gate.ok, render_class_gate(gate)
    return render_class_gate(gate)


def test_catalogue_names_readme_rules_once() -> None:
    """Each class belongs to a README rule and names a distinct (rule, class) cell."""
    cells = [(c.rule, c.name) for c in CATALOGUE]
    assert len(cells) == len(set(cells))
    assert {c.rule for c in CATALOGUE} <= set(RULES)


def test_every_class_is_exercised_at_its_first_turn_fast() -> None:
    """Seeds 0-2 x 20 turns apply every field class somewhere and cover each class wherever it applies."""
    text = _gate(range(3), 20)
    fields = {(c.rule, c.name) for c in FIELD_CLASSES}
    never = [line.split()[:2] for line in text.splitlines() if "never applies" in line]
    assert not [cell for cell in never if tuple(cell) in fields], never


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_every_class_is_exercised_at_its_first_turn(seed: int) -> None:
    """Seeds 0-19 x 60 turns: each class is covered at its first turn and every later turn where it applies."""
    _gate(range(seed, seed + 1), 60)
