"""A scenario's suites made ahead (`engine.suites.AttemptSuites.ahead`): the attempt expected next has its suite
made once, before its test step asks, and an attempt that was not expected gets its own."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import staminad.engine.suites as engine
from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.model import Suite
from staminad.suite.pool import WorkerPool

SCENARIO = generate(0, ScenarioParams(turns=2))


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The (turn, attempt) of every suite the engine generates (in its threads), in order."""
    made: list[tuple[int, int]] = []

    def spy(*args: Any) -> Suite:
        made.append((args[2], args[4]))
        return generate_suite(*args)

    monkeypatch.setattr(engine, "generate_suite", spy)
    return made


async def _ask(suites: engine.AttemptSuites, turn: int, attempt: int, ahead: bool = False) -> int:
    state, history = state_and_history(SCENARIO, turn)
    if ahead:
        await suites.ahead(turn, attempt, state, 0, history)
        return 0
    return await suites.get(turn, attempt, state, 0, history)


@pytest.mark.anyio
async def test_a_suite_made_ahead_is_the_one_its_attempt_gets(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ahead(1, 1)` then `get(1, 1)` generates it once, and `get` answers its number of tests."""
    made = _spy(monkeypatch)
    suites = engine.AttemptSuites(None)
    await _ask(suites, 0, 1)
    await _ask(suites, 1, 1, ahead=True)
    tests = await _ask(suites, 1, 1)
    state, history = state_and_history(SCENARIO, 1)
    assert made == [(0, 1), (1, 1)] and tests == len(generate_suite(state, 0, 1, history, 1).tests)
    await suites.close()


@pytest.mark.anyio
async def test_get_waits_for_a_suite_still_being_made_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test step asking while its suite is being made ahead waits for it instead of making a second one."""
    made = _spy(monkeypatch)
    suites = engine.AttemptSuites(None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_ask, suites, 2, 1, True)
        await anyio.wait_all_tasks_blocked()  # the ahead task is in its thread, generating
        await _ask(suites, 2, 1)
    assert made == [(2, 1)]
    await suites.close()


@pytest.mark.anyio
async def test_an_unexpected_attempt_gets_its_own_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite made ahead for (1, 1) does not answer (0, 2): that one is generated, and (1, 1) still waits."""
    made = _spy(monkeypatch)
    suites = engine.AttemptSuites(None)
    await _ask(suites, 1, 1, ahead=True)
    await _ask(suites, 0, 2)
    await _ask(suites, 1, 1)
    assert made == [(1, 1), (0, 2)]
    await suites.close()


@pytest.mark.anyio
async def test_the_next_turn_made_ahead_survives_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next turn's suite made while the attempt ran is still there after the retry that a failure brought."""
    made = _spy(monkeypatch)
    suites = engine.AttemptSuites(None)
    await _ask(suites, 0, 1)
    await _ask(suites, 1, 1, ahead=True)  # made as (0, 1) ran
    await _ask(suites, 0, 2, ahead=True)  # (0, 1) failed: its retry
    await _ask(suites, 0, 2)
    await _ask(suites, 1, 1)
    assert made == [(0, 1), (1, 1), (0, 2)]
    await suites.close()


@pytest.mark.anyio
async def test_no_more_than_ahead_suites_are_held_and_the_earliest_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A third suite made ahead drops the earliest of the two held, which its attempt then makes again."""
    made = _spy(monkeypatch)
    suites = engine.AttemptSuites(None)
    for turn, attempt in ((0, 2), (1, 1), (0, 3)):
        await _ask(suites, turn, attempt, ahead=True)
    await _ask(suites, 0, 2)
    await _ask(suites, 0, 3)
    await _ask(suites, 1, 1)
    assert made == [(0, 2), (1, 1), (0, 3), (0, 2)]
    await suites.close()


@pytest.mark.anyio
async def test_nothing_is_made_ahead_for_an_attempt_already_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking ahead for the held attempt or one before it makes nothing: those suites are never wanted again."""
    made = _spy(monkeypatch)
    suites = engine.AttemptSuites(None)
    await _ask(suites, 1, 2)
    await _ask(suites, 1, 2, ahead=True)
    await _ask(suites, 0, 1, ahead=True)
    assert made == [(1, 2)]
    await suites.close()


def test_suites_overlap_only_where_a_second_worker_makes_them() -> None:
    """Made while another suite runs only with two workers or more: a thread would take the run's GIL."""
    assert not engine.AttemptSuites(None).overlaps
    assert not engine.AttemptSuites(WorkerPool(1)).overlaps
    assert engine.AttemptSuites(WorkerPool(2)).overlaps
