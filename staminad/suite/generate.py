"""Suite generation: from a state (and what the turn removed), the tests a correct server passes.

Each test checks one stated rule on one entity or field and starts from an empty store. Where the
texts allow several answers (200 or 201, 400 or 422) every allowed answer passes. The suite is
seeded by (scenario seed, turn, attempt), so it is the same on every run; each attempt of a turn runs
the same tests on data of its own (`draws`), so answers replayed from an earlier attempt fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from staminad.bench.schema import State
from staminad.suite import rawbody
from staminad.suite.actions import action_tests
from staminad.suite.aggregates import analytics_tests
from staminad.suite.builder import Builder
from staminad.suite.data import scalar_body
from staminad.suite.draws import SuiteRandom, ident
from staminad.suite.entitytests import entity_tests
from staminad.suite.fieldtests import field_tests
from staminad.suite.history import History
from staminad.suite.historytests import history_tests
from staminad.suite.model import OK_OR_EMPTY, ListIds, Suite, req


def _reset(b: Builder, history: History | None) -> None:
    steps: list[Any] = []
    for e in b.state.entities[:3]:
        body = scalar_body(b.rng, b.state, e, ident(b.rng, f"{e.endpoint}-r"))
        steps.append(req("POST", f"/{e.endpoint}", body))
    steps.append(req("POST", "/reset", expect=OK_OR_EMPTY, why="POST /reset must succeed"))
    steps += [
        req("GET", f"/{e.endpoint}", checks=(ListIds(()),), why="reset must empty every collection")
        for e in b.state.entities[:3]
    ]
    b.add("reset_clears_everything", "missing_feature", "reset", steps)


def _entities(b: Builder, history: History | None) -> None:
    for e in b.state.entities:
        entity_tests(b, e)
        for f in e.fields:
            field_tests(b, e, f)


def _analytics(b: Builder, history: History | None) -> None:
    for a in b.state.analytics:
        for name, category, rule, steps, classes in analytics_tests(b.state, a, b.rng, b.class_rng):
            b.add(name, category, rule, steps, classes)


def _actions(b: Builder, history: History | None) -> None:
    for action in b.state.actions:
        for name, category, rule, steps, classes in action_tests(b.state, action, b.rng):
            b.add(name, category, rule, steps, classes)


def _history(b: Builder, history: History | None) -> None:
    if history is not None:
        history_tests(b, history)


def _raw_bodies(b: Builder, history: History | None) -> None:
    for e in b.state.entities:
        for test in (*rawbody.create_tests(b.rng, b.state, e), *rawbody.patch_tests(b.rng, b.state, e)):
            b.add(*test)
    for action in b.state.actions:
        for test in rawbody.action_tests(b.rng, b.state, action):
            b.add(*test)


# Every family of tests, in the order that keeps each test's draws: a family added later goes last (raw bodies
# were drawn last, so that the data of every test before stayed what it was before raw bodies were tested).
FAMILIES: tuple[Callable[[Builder, History | None], None], ...] = (
    _reset,
    _entities,
    _analytics,
    _actions,
    _history,
    _raw_bodies,
)


def _build(state: State, rng: SuiteRandom, history: History | None) -> Builder:
    b = Builder(state, rng)
    for family in FAMILIES:
        family(b, history)
    return b


def generate_suite(state: State, seed: int, turn: int, history: History | None = None, attempt: int = 1) -> Suite:
    """T's test list for one attempt of a turn (counted from 1, as the engine does); deterministic in
    (state, seed, turn, history, attempt).

    Every attempt has the same tests with data and ids of its own (see `draws`). A later attempt builds
    the first attempt's suite too, to learn what each of its tests picked, so it costs twice as much.
    """
    replay = None
    if attempt > 1:
        replay = _build(state, SuiteRandom(seed, turn), history).rng.picks
    b = _build(state, SuiteRandom(seed, turn, attempt, replay), history)
    return Suite(seed=seed, turn=turn, tests=tuple(b.tests))
