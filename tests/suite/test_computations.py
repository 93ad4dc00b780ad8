"""The input classes of computations: a state whose guards, effects and analytics meet every null and empty case
gets a test for each, the reference passes them, and each mutant of those cases fails them."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from staminad.bench.schema import (
    Action,
    Analytics,
    Compare,
    Compute,
    Entity,
    EnumType,
    Field,
    FieldOperand,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
)
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.reference.nullmutants import SPECS
from staminad.reference.server import App
from staminad.suite.classes import applicable, covered
from staminad.suite.computations import COMPUTATION_CLASSES
from staminad.suite.generate import generate_suite
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import run_suite

ITEM = Entity(
    name="Item",
    fields=(
        Field(name="price", kind="integer", nullable=True, minimum=0, maximum=100),
        Field(name="label", kind="string", nullable=True),
    ),
)
ORDER = Entity(
    name="Order",
    fields=(
        Field(name="status", kind="enum", enum="OrderStatus", required=True),
        Field(name="qty", kind="integer", nullable=True, maximum=10),
        Field(name="rate", kind="float", minimum=0.0, maximum=500.0),
        Field(name="stock", kind="integer"),
        Field(name="memo", kind="string"),
        Field(name="flag", kind="boolean", nullable=True),
        Field(name="items", kind="ref_list", target="Item"),
        Field(name="main", kind="ref", target="Item", nullable=True),
    ),
)
SHIP = Action(
    entity="Order",
    name="ship",
    field="status",
    sources=("open",),
    target="closed",
    conditions=(
        Compare(FieldOperand("qty"), "<", 5),
        Quantified("all", "items", "price", ">", 10),
        NullCheck("flag", False),
    ),
)
CLOSE = Action(
    entity="Order",
    name="close",
    field="status",
    sources=("open",),
    target="closed",
    effects=(
        Increment("stock", 1),
        SetValue("memo", "closed"),
        Compute("rate", "qty", "*", "qty"),
        OnReference("main", Increment("price", 5)),
        ForEach("items", SetValue("label", "done")),
    ),
)
STATE = State(
    enums=(EnumType(name="OrderStatus", values=("open", "closed")),),
    entities=(ITEM, ORDER),
    actions=(SHIP, CLOSE),
    analytics=(Analytics(entity="Item", op="avg", field="price"), Analytics(entity="Order", op="count")),
)
CELLS = {(c.rule, c.name) for c in COMPUTATION_CLASSES}


def _passes(bugs: list[str]) -> bool:
    suite = generate_suite(STATE, 0, 0)
    app = App({"schema": msgspec.to_builtins(STATE), "bugs": bugs})
    return asyncio.run(run_suite(suite, AppTransport(app))).passed


def test_every_computation_class_applies_and_is_covered() -> None:
    """Each null and empty class of guards, effects and analytics applies to the state and some test covers it."""
    assert applicable(STATE) >= CELLS
    assert not CELLS - covered(generate_suite(STATE, 0, 0))


def test_reference_passes_the_null_and_empty_tests() -> None:
    """The reference server answers every null and empty case as the README says."""
    assert _passes([])


@pytest.mark.parametrize("bug", [s[0] for s in SPECS if s[1] != "delete-field"])
def test_each_mutant_of_a_computation_class_is_exercised_and_caught(bug: str) -> None:
    """The mutant's predicate holds on the state, and the suite of that very state fails it."""
    assert MUTANT_BY_BUG[bug].exercised(STATE, ())
    assert not _passes([bug])
