"""Removed guards and effects: the history records them, the suite tests them at the turn of the removal, the
reference passes those tests and a server still holding the removed guard or effect fails them."""

from __future__ import annotations

import asyncio

import msgspec

from staminad.bench.changes import Change, DeleteField, RemoveCondition, RemoveEffect, RenameEntity, transition
from staminad.bench.schema import SetValue, State
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.reference.server import App
from staminad.suite.generate import generate_suite
from staminad.suite.history import turn_history
from staminad.suite.inprocess import AppTransport
from staminad.suite.runner import SuiteResult, run_suite
from tests.suite.test_computations import CLOSE, SHIP, STATE

GUARD = SHIP.conditions[0]  # qty < 5
EFFECT = CLOSE.effects[1]  # set memo to "closed"
CHANGES: list[Change] = [RemoveCondition("Order", "ship", GUARD), RemoveEffect("Order", "close", EFFECT)]
AFTER = transition(STATE, CHANGES)
NEW = {"order_ship_guard_removed", "order_close_effect_removed"}


def _run(server_state: State) -> SuiteResult:
    suite = generate_suite(AFTER, 0, 1, turn_history(None, STATE, CHANGES, AFTER))
    app = App({"schema": msgspec.to_builtins(server_state), "bugs": []})
    return asyncio.run(run_suite(suite, AppTransport(app)))


def test_history_records_the_removed_guard_and_effect() -> None:
    """A removal of a guard and of an effect is recorded with its action, as of the end of the turn."""
    h = turn_history(None, STATE, CHANGES, AFTER)
    assert h.removed_guards == (("Order", "ship", GUARD),)
    assert h.removed_effects == (("Order", "close", EFFECT, 1),)


def test_history_follows_a_later_rename_and_drops_what_a_later_deletion_broke() -> None:
    """A rename later in the batch moves the record; a deletion of the guard's field leaves nothing to test."""
    renamed: list[Change] = [*CHANGES, RenameEntity("Order", "Purchase")]
    h = turn_history(None, STATE, renamed, transition(STATE, renamed))
    assert h.removed_guards == (("Purchase", "ship", GUARD),)
    deleted: list[Change] = [CHANGES[0], DeleteField("Order", "qty")]
    assert turn_history(None, STATE, deleted, transition(STATE, deleted)).removed_guards == ()


def test_the_suite_tests_the_removals_and_the_reference_passes() -> None:
    """The turn's suite has a test per removed guard and effect, and the reference server passes it all."""
    result = _run(AFTER)
    assert {r.name for r in result.results} >= NEW
    assert result.passed


def test_a_server_that_kept_the_removed_guard_and_effect_fails_those_tests() -> None:
    """A server that kept a removed guard and effect fails the removal tests and its action's other tests."""
    assert {f.name for f in _run(STATE).failures} >= NEW


def test_the_mutants_are_exercised_at_the_turn_of_the_removal() -> None:
    """Both removal mutants count as exercised at this turn, and neither without a removal."""
    for bug in ("ignore-remove_guard", "ignore-remove_effect"):
        removal = MUTANT_BY_BUG[bug].removal
        assert removal is not None and removal(STATE, AFTER, CHANGES)
        assert not removal(STATE, STATE, [])


def test_an_effect_a_later_effect_overwrites_is_not_exercisable() -> None:
    """A removed increase followed by a set of the same field shows in no data: the mutant is not exercised."""
    changes: list[Change] = [RemoveEffect("Order", "close", CLOSE.effects[0])]  # stock += 1
    shadowing = msgspec.structs.replace(CLOSE, effects=(*CLOSE.effects, SetValue("stock", 3)))
    before = msgspec.structs.replace(STATE, actions=(SHIP, shadowing))
    removal = MUTANT_BY_BUG["ignore-remove_effect"].removal
    assert removal is not None and not removal(before, transition(before, changes), changes)
    assert removal(STATE, transition(STATE, changes), changes)


def test_a_removed_guard_whose_field_the_batch_deleted_is_exercised_through_its_refusals() -> None:
    """The removed `qty < 5` has no test once qty is gone, but a server that kept it refuses every call: exercised."""
    deleted: list[Change] = [CHANGES[0], DeleteField("Order", "qty")]
    removal = MUTANT_BY_BUG["ignore-remove_guard"].removal
    assert removal is not None and removal(STATE, transition(STATE, deleted), deleted)
