"""Null targets of computations and empty lists a guard allows: each gets an effects or guards test at the turn
it exists, expecting what the README says, which the reference passes and the matching mutant fails."""

from __future__ import annotations

import asyncio

import msgspec

from staminad.bench.schema import (
    Action,
    Compare,
    Compute,
    CountOperand,
    Entity,
    EnumType,
    Field,
    FieldOperand,
    ForEach,
    Increment,
    State,
)
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.reference.server import App
from staminad.suite.classes import applicable, covered
from staminad.suite.computedata import empty_allowed, holds_empty, null_target_free
from staminad.suite.generate import generate_suite
from staminad.suite.inprocess import AppTransport
from staminad.suite.model import Equals, Suite
from staminad.suite.runner import run_suite

ITEM = Entity(name="Item", fields=(Field(name="weight", kind="integer", minimum=0, maximum=100),))
BOX = Entity(
    name="Box",
    fields=(
        Field(name="status", kind="enum", enum="BoxStatus", required=True),
        Field(name="size", kind="integer", required=True, nullable=True, minimum=0),
        Field(name="rank", kind="integer", required=True, minimum=1, maximum=1000),
        Field(name="items", kind="ref_list", target="Item"),
    ),
)
GROW = Action(  # `size = rank + size`: the target is an operand, so a null target is a null input
    entity="Box",
    name="grow",
    field="status",
    sources=("open",),
    target="closed",
    effects=(Compute("size", "rank", "+", "size"),),
)
PACK = Action(  # a `for each` over a list whose only guard holds for an empty one
    entity="Box",
    name="pack",
    field="status",
    sources=("open",),
    target="closed",
    conditions=(Compare(CountOperand("items"), "<=", 3),),
    effects=(ForEach("items", Increment("weight", 1)),),
)
STATE = State(
    enums=(EnumType(name="BoxStatus", values=("open", "closed")),),
    entities=(ITEM, BOX),
    actions=(GROW, PACK),
)


def _suite() -> Suite:
    return generate_suite(STATE, 0, 0)


def _passes(bugs: list[str]) -> bool:
    app = App({"schema": msgspec.to_builtins(STATE), "bugs": bugs})
    return asyncio.run(run_suite(_suite(), AppTransport(app))).passed


def test_empty_list_rules_follow_the_guard_text() -> None:
    """`count(...) <= 3` holds for an empty list, `count(...) >= 1` does not, a guard on another list never blocks."""
    assert holds_empty(Compare(CountOperand("items"), "<=", 3), "items")
    assert not holds_empty(Compare(CountOperand("items"), ">=", 1), "items")
    assert holds_empty(Compare(CountOperand("other"), ">=", 1), "items")
    assert empty_allowed(PACK, "items")


def test_a_target_pinned_by_a_guard_is_not_free() -> None:
    """A target a value guard reads cannot be null while the guards hold; an unguarded nullable one can."""
    guarded = Action(
        entity="Box",
        name="g",
        field="status",
        sources=("open",),
        target="closed",
        conditions=(Compare(FieldOperand("size"), ">", 0),),
    )
    assert null_target_free(GROW, BOX, "size")
    assert not null_target_free(GROW, BOX, "rank")  # required and not nullable
    assert not null_target_free(guarded, BOX, "size")


def test_null_target_and_guarded_empty_list_are_tested_under_their_rules() -> None:
    """Null-target and empty-list tests exist under the effects and guards rules and cover the classes that apply."""
    suite = _suite()
    rules = {t.name: t.rule for t in suite.tests}
    assert rules["box_grow_succeeds_null_target"] == "effects"
    assert rules["box_pack_succeeds_no_targets"] == "effects"
    assert rules["box_pack_guard_1_empty"] == "guards"
    wanted = {("effects", "null_target"), ("effects", "empty_list"), ("guards", "empty_list")}
    assert wanted <= applicable(STATE)
    assert wanted <= covered(suite)


def test_null_target_expects_the_null_kept() -> None:
    """With the target null and an operand, the computation has a null input: the effects test expects it null."""
    test = next(t for t in _suite().tests if t.name == "box_grow_succeeds_null_target")
    call = next(s for s in test.steps if s.action)
    assert call.expect == (200,)
    assert test.rule == "effects"
    assert any(isinstance(c, Equals) and c.path == ("size",) and c.value is None for c in call.checks)


def test_reference_passes_and_both_mutants_are_exercised_and_caught() -> None:
    """The reference passes; compute-null-as-zero and for-each-empty-500 are exercisable on the state and fail."""
    assert _passes([])
    for bug in ("compute-null-as-zero", "for-each-empty-500"):
        assert MUTANT_BY_BUG[bug].exercised(STATE, ())
        assert not _passes([bug])
