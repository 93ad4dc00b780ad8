"""Raw steps go out byte for byte, every endpoint that takes a body gets raw-body tests, and they catch 500s."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec
import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.reference.mutants import MUTANT_BY_BUG
from staminad.reference.server import App
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.inprocess import AppTransport
from staminad.suite.model import Step, Suite, Test, raw_req, req
from staminad.suite.runner import run_suite_blocking

SEEDS = range(5)
TURNS = 12
_SCENARIOS = {seed: generate(seed, ScenarioParams(turns=TURNS)) for seed in SEEDS}


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, str | None, bytes]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, self.headers.get("Content-Type"), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_POST = do_PATCH = _answer


@contextlib.contextmanager
def _recording() -> Iterator[tuple[str, list[tuple[str, str, str | None, bytes]]]]:
    seen: list[tuple[str, str, str | None, bytes]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_raw_steps_send_their_bytes_and_content_type_exactly() -> None:
    """A raw step's body and Content-Type (or its absence) reach the server as written; JSON steps are unchanged."""
    steps = (
        raw_req("POST", "/a", b'{"id": NaN, "id": "x"'),
        raw_req("POST", "/a", b"", None),
        raw_req("PATCH", "/a/1", b"[1]", "text/plain"),
        req("POST", "/a", {"id": "y"}),
    )
    suite = Suite(seed=0, turn=0, tests=(Test(name="t", category="validation", rule="json", steps=steps),))
    with _recording() as (url, seen), Http11Transport.for_url(url) as transport:
        assert run_suite_blocking(suite, transport).passed
    assert seen[1:] == [
        ("POST", "/a", "application/json", b'{"id": NaN, "id": "x"'),
        ("POST", "/a", None, b""),
        ("PATCH", "/a/1", "text/plain", b"[1]"),
        ("POST", "/a", "application/json", b'{"id": "y"}'),
    ]


def _first_turns() -> Iterator[tuple[int, int, Any, Any]]:
    """(seed, turn, state, history) for every turn of the scenarios under test."""
    for seed, scenario in _SCENARIOS.items():
        for turn in range(TURNS + 1):
            state, history = state_and_history(scenario, turn)
            yield seed, turn, state, history


def _raw_paths(steps: tuple[Step, ...]) -> set[tuple[str, str]]:
    return {(s.method, s.path) for s in steps if s.raw is not None}


def test_every_endpoint_that_takes_a_body_gets_raw_bodies_whenever_it_exists() -> None:
    """Each turn's suite sends raw bodies to every entity's POST and PATCH and to every action."""
    for seed, turn, state, history in _first_turns():
        suite = generate_suite(state, seed, turn, history)
        sent = set().union(*(_raw_paths(t.steps) for t in suite.tests if t.rule == "json"))
        for e in state.entities:
            assert ("POST", f"/{e.endpoint}") in sent, (seed, turn, e.name)
            assert any(m == "PATCH" and p.startswith(f"/{e.endpoint}/") for m, p in sent), (seed, turn, e.name)
        for a in state.actions:
            ep = state.entity(a.entity).endpoint
            assert any(m == "POST" and p.startswith(f"/{ep}/") and p.endswith(f"/{a.name}") for m, p in sent), (
                seed,
                turn,
                a.name,
            )


def _run(state: Any, seed: int, turn: int, history: Any, bugs: tuple[str, ...] = (), rule: str = "") -> list[Any]:
    suite = generate_suite(state, seed, turn, history)
    if rule:  # only the tests of one rule
        suite = msgspec.structs.replace(suite, tests=tuple(t for t in suite.tests if t.rule == rule))
    config = {"schema": msgspec.to_builtins(state), "bugs": list(bugs)}
    return run_suite_blocking(suite, AppTransport(App(config))).failures


@pytest.mark.parametrize("bug", ["malformed-json-500", "non-object-body-500"])
def test_a_server_answering_500_to_a_bad_body_fails_at_turn_0(bug: str) -> None:
    """Both servers found passing turn 40 now crash at turn 0 under the json rule (and types: NaN is no JSON)."""
    for seed in SEEDS:
        state, history = state_and_history(_SCENARIOS[seed], 0)
        assert not _run(state, seed, 0, history)
        failures = _run(state, seed, 0, history, (bug,))
        assert failures, (seed, bug)
        crash = MUTANT_BY_BUG[bug].category
        assert (crash, "json") in {(f.category, f.rule) for f in failures} <= {(crash, "json"), (crash, "types")}


def test_the_reference_passes_every_raw_body_test_at_every_turn() -> None:
    """No raw-body test fails the reference server, whose answers are the strictest the README allows."""
    for seed, turn, state, history in _first_turns():
        assert not _run(state, seed, turn, history, rule="json"), (seed, turn)
