"""Suite generation: from a state (and what the turn removed), the tests a correct server passes.

Each test checks one stated rule on one entity or field and starts from an empty store. Where the
texts allow several answers (200 or 201, 400 or 422) every allowed answer passes. The suite is
seeded by (scenario seed, turn, attempt), so it is the same on every run; each attempt of a turn runs
the same tests on data of its own (`draws`), so answers replayed from an earlier attempt fail.
"""

from __future__ import annotations

from typing import Any

from staminad.bench.schema import Analytics, State
from staminad.suite import rawbody
from staminad.suite.actions import action_tests
from staminad.suite.aggregates import analytics_tests
from staminad.suite.data import scalar_body
from staminad.suite.draws import SuiteRandom, ident
from staminad.suite.entitytests import EntityTests
from staminad.suite.fieldtests import FieldTests
from staminad.suite.history import History
from staminad.suite.historytests import HistoryTests
from staminad.suite.model import OK_OR_EMPTY, ListIds, Suite, req


class SuiteBuilder(EntityTests, FieldTests, HistoryTests):
    """Every family of tests over one state; `_build` calls them in the order that keeps each test's draws."""

    def analytics(self, a: Analytics) -> None:
        for name, category, rule, steps, classes in analytics_tests(self.state, a, self.rng, self.class_rng):
            self.add(name, category, rule, steps, classes)

    def reset(self) -> None:
        steps: list[Any] = []
        for e in self.state.entities[:3]:
            body = scalar_body(self.rng, self.state, e, ident(self.rng, f"{e.endpoint}-r"))
            steps.append(req("POST", f"/{e.endpoint}", body))
        steps.append(req("POST", "/reset", expect=OK_OR_EMPTY, why="POST /reset must succeed"))
        steps += [
            req("GET", f"/{e.endpoint}", checks=(ListIds(()),), why="reset must empty every collection")
            for e in self.state.entities[:3]
        ]
        self.add("reset_clears_everything", "missing_feature", "reset", steps)


def _build(state: State, rng: SuiteRandom, history: History | None) -> SuiteBuilder:
    b = SuiteBuilder(state, rng)
    b.reset()
    for e in state.entities:
        b.entity(e)
        for f in e.fields:
            b.field(e, f)
    for a in state.analytics:
        b.analytics(a)
    for action in state.actions:
        for name, category, rule, steps, classes in action_tests(state, action, b.rng):
            b.add(name, category, rule, steps, classes)
    if history is not None:
        b.history(history)
    # Drawn last, so that the data of every test above stays what it was before raw bodies were tested.
    for e in state.entities:
        for test in (*rawbody.create_tests(b.rng, state, e), *rawbody.patch_tests(b.rng, state, e)):
            b.add(*test)
    for action in state.actions:
        for test in rawbody.action_tests(b.rng, state, action):
            b.add(*test)
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
