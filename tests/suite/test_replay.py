"""A server that replays the answers of the attempt before fails the retry; the reference server passes every
attempt (the per-attempt data costs no false positives)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import msgspec
import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.bench.schema import State
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.reference.agent import step
from staminad.reference.server import App, make_server
from staminad.suite.generate import generate_suite
from staminad.suite.history import History, turn_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.inprocess import AppTransport
from staminad.suite.model import Suite
from staminad.suite.runner import SuiteResult, run_suite, run_suite_blocking
from tests.suite.replay import ReplayServer

pytestmark = pytest.mark.slow  # 5-8 s of CPU per seed: every attempt of many turns against the reference server

Turn = tuple[int, State, History | None, dict[str, Any]]


def _reference_turns(seed: int, turns: int) -> Iterator[Turn]:
    """(turn, state, history, the reference agent's server config) for each turn, as `staminad validate` builds them."""
    scenario = generate(seed, ScenarioParams(turns=turns))
    spec, memory = render_spec(scenario.initial), dict[str, Any]()
    state, history = scenario.initial, None
    for turn in range(turns + 1):
        if turn == 0:
            prompt = initial_prompt("python")
        else:
            prompt, after = change_prompt(scenario.turns[turn - 1], state)
            history = turn_history(history, state, scenario.turns[turn - 1], after)
            state = after
        memory, config = step(memory, prompt, spec, None, False)
        yield turn, state, history, config


def _run(suite: Suite, app: App) -> SuiteResult:
    return run_suite_blocking(suite, AppTransport(app))


def _requests(suite: Suite) -> set[tuple[str, str, bytes]]:
    return {
        (s.method, s.path, msgspec.json.encode(s.body) if s.has_body else b"") for t in suite.tests for s in t.steps
    }


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_replayed_answers_pass_the_recorded_attempt_and_fail_the_next(seed: int) -> None:
    """Replayed answers pass the recorded attempt and fail the next, except tests a tableless server passes."""
    for turn, state, history, config in _reference_turns(seed, 24):
        if turn % 8:
            continue
        for k in (1, 2):
            recorded, retry = (generate_suite(state, seed, turn, history, a) for a in (k, k + 1))
            server = ReplayServer(config)
            assert _run(recorded, server).passed
            server.recording = False
            assert _run(recorded, server).passed, "the table replays the attempt it recorded"
            result = _run(retry, server)
            assert not result.passed
            seen = _requests(recorded)
            for test, outcome in zip(retry.tests, result.results, strict=True):
                if outcome.passed:  # every step repeats a recorded request or wants the 404 an unknown one gets
                    assert all(
                        (s.method, s.path, msgspec.json.encode(s.body) if s.has_body else b"") in seen
                        or (s.expect == (404,) and not s.checks)
                        for s in test.steps
                    ), test.name
            creates = [r for r in result.results if r.rule == "create"]
            assert creates and not any(r.passed for r in creates)
            assert len(result.failures) > 0.9 * len(result.results)


def test_a_replaying_server_over_http_fails_the_retry() -> None:
    """Over real sockets too: the replaying server passes the attempt it recorded and fails the next one."""
    _, state, history, config = list(_reference_turns(3, 6))[-1]
    server = ReplayServer(config)
    http = make_server(server, "127.0.0.1", 0)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()

    async def over_http(suite: Suite) -> SuiteResult:
        async with Http11Transport.for_url(f"http://127.0.0.1:{http.server_address[1]}", 5.0) as transport:
            return await run_suite(suite, transport)

    try:
        first, second = (generate_suite(state, 3, 6, history, a) for a in (1, 2))
        assert anyio.run(over_http, first).passed
        server.recording = False
        assert anyio.run(over_http, first).passed
        retry = anyio.run(over_http, second)
        assert not retry.passed and server.replayed > 0
    finally:
        http.shutdown()
        http.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("seed", [0, 3, 7, 11])
def test_the_reference_server_passes_every_attempt(seed: int) -> None:
    """The reference agent's server passes the suites of attempts 1 to 4 at every turn: no false positives."""
    for turn, state, history, config in _reference_turns(seed, 20):
        for attempt in (1, 2, 3, 4):
            result = _run(generate_suite(state, seed, turn, history, attempt), App(config))
            assert result.passed, (turn, attempt, result.failures[:2])
