"""Each attempt of a turn runs the same tests on data of its own: names, rules and picks stay, requests change."""

from __future__ import annotations

import msgspec
import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.schema import State
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.model import Suite, Test

SCENARIOS = {seed: generate(seed, ScenarioParams(turns=30)) for seed in (0, 3, 7)}
CASES = [(seed, turn) for seed in SCENARIOS for turn in (0, 12, 30)]


def _suite(seed: int, turn: int, attempt: int = 1) -> Suite:
    state, history = state_and_history(SCENARIOS[seed], turn)
    return generate_suite(state, seed, turn, history, attempt)


def _requests(test: Test) -> list[tuple[str, str, bytes]]:
    return [
        (s.method, s.path, s.raw if s.raw is not None else msgspec.json.encode(s.body) if s.has_body else b"")
        for s in test.steps
    ]


def _dataless(test: Test) -> bool:
    """Tests whose requests hold nothing drawn, so no attempt can change them: a GET of an analytics path over
    an empty store or of a removed one, and an id rejection on an entity without scalar fields (the whole body
    is the bad id, or nothing)."""
    if (test.name.startswith("analytics_") and test.name.endswith("_empty")) or test.name.startswith("gone_analytics"):
        return all(s.method == "GET" and not s.has_body for s in test.steps)
    bodies = [s.body for s in test.steps if s.has_body]
    return test.rule == "client-id" and all(isinstance(b, dict) and set(b) <= {"id"} for b in bodies)


def _picks(state: State, test: Test) -> list[object]:
    """What a test picked: the fields its PATCHes send, and the state the entity an action is called on starts in."""
    out: list[object] = [sorted(s.body) for s in test.steps if s.method == "PATCH" and isinstance(s.body, dict)]
    for k, s in enumerate(test.steps):
        if s.action and k and test.steps[k - 1].method == "POST" and test.steps[k - 1].has_body:
            called = [a for a in state.actions if s.path.endswith(f"/{a.name}") and _on(state, a.entity, s.path)]
            out += [test.steps[k - 1].body.get(a.field) for a in called]  # none for a removed action
    return out


def _on(state: State, entity: str, path: str) -> bool:
    e = state.entity(entity)
    return e is not None and path.startswith(f"/{e.endpoint}/")


@pytest.mark.parametrize(("seed", "turn"), CASES)
def test_attempts_keep_the_tests_and_their_picks(seed: int, turn: int) -> None:
    """Every attempt keeps the same tests and picks in the same order; the first is the default suite."""
    state, _ = state_and_history(SCENARIOS[seed], turn)
    first = _suite(seed, turn)
    assert _suite(seed, turn, 1) == first
    for attempt in (2, 3, 7):
        later = _suite(seed, turn, attempt)
        assert [(t.name, t.category, t.rule) for t in later.tests] == [
            (t.name, t.category, t.rule) for t in first.tests
        ]
        assert [_picks(state, t) for t in later.tests] == [_picks(state, t) for t in first.tests]


@pytest.mark.parametrize(("seed", "turn"), CASES)
def test_attempts_differ_in_every_request_that_holds_data(seed: int, turn: int) -> None:
    """Attempts 1 and 2 differ in the requests of every test except those that hold no drawn data at all."""
    first, second = _suite(seed, turn, 1), _suite(seed, turn, 2)
    same = [a.name for a, b in zip(first.tests, second.tests, strict=True) if _requests(a) == _requests(b)]
    assert [n for n in same if not _dataless(next(t for t in first.tests if t.name == n))] == []
    assert len(same) < len(first.tests) / 20, same  # the data-less ones are a handful


@pytest.mark.parametrize(("seed", "turn"), [(0, 12), (7, 30)])
def test_an_attempts_suite_is_the_same_whenever_it_is_made(seed: int, turn: int) -> None:
    """The same (seed, turn, attempt) always gives the same suite, and later attempts differ from each other."""
    assert _suite(seed, turn, 2) == _suite(seed, turn, 2)
    assert [_requests(t) for t in _suite(seed, turn, 2).tests] != [_requests(t) for t in _suite(seed, turn, 3).tests]
