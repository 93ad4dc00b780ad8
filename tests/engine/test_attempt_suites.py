"""The engine runs each attempt's own suite (local runtime): feedback retries get fresh data, an infra retry of an
attempt runs the suite that attempt was given."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.model import Suite
from state.store import AttemptRow, Store
from tests.helpers.sweeps import sweep, write_sweep

pytestmark = [pytest.mark.anyio, pytest.mark.sweep]


class _Suites:
    """What the engine generated (turn, attempt per call) and which suites it ran, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import staminad.engine.suites as engine  # the in-thread path: an in-process sweep has no worker pool

        self.made: list[tuple[int, int]] = []
        self.ran: list[Suite] = []
        self._lock = threading.Lock()  # generation runs in worker threads
        from staminad.suite.generate import generate_suite as real_generate
        from staminad.suite.runner import run_suite as real_run

        def generate_spy(*args: Any) -> Suite:
            with self._lock:
                self.made.append((args[2], args[4]))
            return real_generate(*args)

        async def run_spy(suite: Suite, transport: Any) -> Any:
            self.ran.append(suite)
            return await real_run(suite, transport)

        monkeypatch.setattr(engine, "generate_suite", generate_spy)
        monkeypatch.setattr(engine, "run_suite", run_spy)


async def _attempts(state: Path, sweep_id: str) -> list[AttemptRow]:
    async with await Store.open(state / "staminad.db") as store:
        rows = await store.scenarios(sweep_id)
        return await store.attempts(rows[0][1].id)


def _expected(turn: int, attempt: int) -> Suite:
    state, history = state_and_history(generate(0, ScenarioParams(turns=1)), turn)
    return generate_suite(state, 0, turn, history, attempt)


def _requests(suite: Suite) -> list[bytes]:
    return [msgspec.json.encode([s.method, s.path, s.body]) for t in suite.tests for s in t.steps]


async def test_each_feedback_retry_runs_a_suite_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutant failing every attempt of turn 0 meets attempts 1, 2 and 3's suites: same tests, other data."""
    suites = _Suites(monkeypatch)
    path = write_sweep(tmp_path, "fresh", ["mutant:list-envelope"], turns=1, retries=2)
    res = await sweep(path, tmp_path / "state")
    assert res["mutant:list-envelope R=2 detailed"].statuses == {"failed": 1}
    rows = await _attempts(tmp_path / "state", "fresh")
    assert [(r.turn, r.attempt, r.outcome) for r in rows] == [(0, 1, "fail"), (0, 2, "fail"), (0, 3, "fail")]
    assert suites.made == [(0, 1), (0, 2), (0, 3)]
    assert suites.ran == [_expected(0, a) for a in (1, 2, 3)]
    names = [[t.name for t in s.tests] for s in suites.ran]
    assert names[0] == names[1] == names[2]
    first, second, third = (set(_requests(s)) for s in suites.ran)
    assert len(first & second) < len(first) / 10 and len(second & third) < len(second) / 10


async def test_an_infra_retry_runs_the_suite_of_the_attempt_it_repeats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness crash on the first call is retried as infra: that retry is still attempt 1 and runs its suite."""
    suites = _Suites(monkeypatch)
    path = write_sweep(tmp_path, "crash", ["fault:crash:once"], turns=1, retries=1)
    res = await sweep(path, tmp_path / "state")
    assert res["fault:crash:once R=1 detailed"].statuses == {"done": 1}
    rows = await _attempts(tmp_path / "state", "crash")
    assert [(r.turn, r.attempt, r.infra_try, r.outcome) for r in rows][:2] == [(0, 1, 0, "infra"), (0, 1, 1, "pass")]
    assert suites.made == [(0, 1), (1, 1)]  # generated once for both tries of attempt 1
    assert suites.ran == [_expected(0, 1), _expected(1, 1)]
