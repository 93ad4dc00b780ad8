"""Action tests show each guard and effect bug on every draw where the schema lets one show, and `exercised` agrees."""

from __future__ import annotations

import asyncio
import random

import msgspec

from staminad.bench.schema import (
    Action,
    ArithOperand,
    Compare,
    Compute,
    Condition,
    CountOperand,
    Effect,
    Entity,
    EnumType,
    Field,
    ForEach,
    Increment,
    NullCheck,
    OnReference,
    Quantified,
    SetValue,
    State,
    SumOperand,
)
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.reference.server import App
from staminad.suite.actions import action_tests
from staminad.suite.inprocess import AppTransport
from staminad.suite.model import Suite, Test
from staminad.suite.runner import run_suite

NOTE = Entity(
    name="Note", fields=(Field(name="description", kind="string"), Field(name="hours", kind="integer", nullable=True))
)
THING = Entity(
    name="Thing",
    fields=(
        Field(name="status", kind="enum", enum="Status", required=True),
        Field(name="weight", kind="float", nullable=True, minimum=0.0),
        Field(name="rank", kind="integer", minimum=0),
        Field(name="age", kind="integer", minimum=1, maximum=1000),
        Field(name="temperature", kind="float", nullable=True, maximum=1000.0),
        Field(name="points", kind="integer"),
        Field(name="sequence", kind="integer", nullable=True, required=True, maximum=10000),
        Field(name="loan", kind="ref", target="Note", nullable=True),
        Field(name="notes", kind="ref_list", target="Note"),
    ),
)
ENUMS = (EnumType(name="Status", values=("open", "closed")),)


def _state(conditions: tuple[Condition, ...], effects: tuple[Effect, ...]) -> tuple[State, Action]:
    action = Action(
        entity="Thing",
        name="act",
        field="status",
        sources=("open",),
        target="closed",
        conditions=conditions,
        effects=effects,
    )
    return State(enums=ENUMS, entities=(NOTE, THING), actions=(action,)), action


def _failures(state: State, action: Action, seed: int, bugs: list[str]) -> list[str]:
    made = action_tests(state, action, random.Random(seed))
    suite = Suite(
        seed=0,
        turn=0,
        tests=tuple(
            Test(name=n, category=c, rule=r, steps=tuple(s))  # type: ignore[arg-type]
            for n, c, r, s, _ in made
        ),
    )
    app = App({"schema": msgspec.to_builtins(state), "bugs": bugs})
    return [f.name for f in asyncio.run(run_suite(suite, AppTransport(app))).failures]


def _always_caught(state: State, action: Action, bug: str) -> None:
    assert MUTANT_BY_BUG[bug].exercised(state, ())
    for seed in range(12):
        assert _failures(state, action, seed, []) == []
        assert _failures(state, action, seed, [bug]), (bug, seed)


def test_a_null_operand_of_a_computed_guard_is_always_tried() -> None:
    """A computed ordering guard that 0 passes is always failed once by a null operand; one 0 fails is not a case."""
    st, action = _state((Compare(ArithOperand("weight", "-", "rank"), "<=", 5), NullCheck("age", True)), ())
    _always_caught(st, action, "null-as-zero-order")
    st, _ = _state((Compare(ArithOperand("weight", "-", "rank"), ">=", 67),), ())
    assert not MUTANT_BY_BUG["null-as-zero-order"].exercised(st, ())


def test_every_null_check_meets_a_falsy_value() -> None:
    """`is null` and `is not null` on a field that can hold 0 each get a test with 0."""
    for is_null in (False, True):
        st, action = _state((NullCheck("temperature", is_null),), (Increment("temperature", 1.5),))
        _always_caught(st, action, "null-check-falsy")


def test_each_computation_gets_its_own_null_operand() -> None:
    """Two computations over shared fields: each has a test where only its operand is null, the target set."""
    st, action = _state(
        (), (Compute("points", "points", "+", "sequence"), Compute("sequence", "points", "*", "sequence"))
    )
    _always_caught(st, action, "compute-null-writes-null")


def test_an_operand_a_guard_pins_null_counts_as_null() -> None:
    """An operand that `is null` pins makes every successful call a null-operand case."""
    st, action = _state((NullCheck("age", True),), (Compute("rank", "age", "*", "rank"),))
    _always_caught(st, action, "compute-null-writes-null")


def test_effects_on_references_are_shown_where_a_target_can_be_linked() -> None:
    """`r is not null` still links a target the effect visibly changes; `r is null` leaves nothing to show."""
    st, action = _state((NullCheck("loan", False),), (OnReference("loan", SetValue("description", "none")),))
    _always_caught(st, action, "no-ref-effects")
    st, _ = _state((NullCheck("loan", True),), (OnReference("loan", SetValue("description", "none")),))
    assert not MUTANT_BY_BUG["no-ref-effects"].exercised(st, ())


def test_a_count_guard_that_allows_one_entity_still_links_one() -> None:
    """`count(this.notes) <= 1` leaves room for one listed entity, which a `for each` effect must change."""
    st, action = _state((Compare(CountOperand("notes"), "<=", 1),), (ForEach("notes", SetValue("description", "x")),))
    _always_caught(st, action, "no-ref-effects")


def test_a_null_increase_reaches_a_target_a_guard_links() -> None:
    """`this.loan is not null` with an increase on the loan's nullable field gets a test where that field is null."""
    st, action = _state((NullCheck("loan", False),), (OnReference("loan", Increment("hours", 2)),))
    _always_caught(st, action, "increase-null-as-zero")


def test_a_bound_crossing_survives_the_data_of_later_effects() -> None:
    """A later overwritten computation does not move the data that makes an earlier one cross a bound."""
    st, action = _state(
        (), (Compute("age", "rank", "*", "age"), Compute("rank", "age", "+", "points"), SetValue("rank", 5))
    )
    _always_caught(st, action, "effects-clamped")


def test_effect_order_matters_only_where_the_effects_do_not_commute() -> None:
    """Shifting one field twice commutes; subtracting the field from another does not."""
    st, _ = _state((), (Compute("points", "rank", "+", "points"), Increment("points", 5)))
    assert not MUTANT_BY_BUG["effects-reversed"].exercised(st, ())
    st, _ = _state((), (Compute("points", "points", "-", "rank"), Compute("points", "rank", "+", "points")))
    assert not MUTANT_BY_BUG["effects-reversed"].exercised(st, ())
    st, action = _state((), (Compute("points", "rank", "-", "points"), Increment("points", 5)))
    _always_caught(st, action, "effects-reversed")


def test_a_for_each_set_the_all_of_guard_pins_shows_nothing() -> None:
    """`all of notes have description == "x"` then setting it to "x" changes nothing; `!= "y"` leaves room."""
    effect = ForEach("notes", SetValue("description", "x"))
    st, _ = _state((Quantified("all", "notes", "description", "==", "x"),), (effect,))
    assert not MUTANT_BY_BUG["for-each-first-only"].exercised(st, ())
    assert not MUTANT_BY_BUG["no-ref-effects"].exercised(st, ())
    st, action = _state((Quantified("all", "notes", "description", "!=", "y"),), (effect,))
    _always_caught(st, action, "for-each-first-only")


def test_an_operand_set_earlier_crosses_with_its_set_value() -> None:
    """`set this.rank to 4` before `age = rank - age`: the data crosses age's lower bound with rank at 4."""
    st, action = _state((), (SetValue("rank", 4), Compute("age", "rank", "-", "age")))
    _always_caught(st, action, "effects-clamped")


def test_a_sum_guard_lists_two_entities_where_a_pair_fits() -> None:
    """`sum(this.notes.hours) < 23` is met by two listed entities, so a `for each` that stops at one shows."""
    st, action = _state(
        (Compare(SumOperand("notes", "hours"), "<", 23),), (ForEach("notes", SetValue("description", "x")),)
    )
    _always_caught(st, action, "for-each-first-only")
