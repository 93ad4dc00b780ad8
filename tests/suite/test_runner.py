"""The runner against real servers: the reference server over sockets, and broken servers of every kind."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec
import pytest

from staminad.bench.scenario import ScenarioParams, generate
from staminad.reference.server import App, make_server
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.model import JSON_TYPE, Equals, Suite, req
from staminad.suite.model import Test as SuiteTest
from staminad.suite.runner import SuiteResult, bodies, run_suite, run_suite_blocking
from tests.helpers import free_port, listening
from tests.helpers.rawserver import Conn, RawServer

pytestmark = pytest.mark.anyio
BROKEN = Path(__file__).with_name("broken_server.py")
SCENARIO = generate(7, ScenarioParams(turns=30))


def broken(mode: str) -> contextlib.AbstractContextManager[str]:
    port = free_port()
    return listening([sys.executable, str(BROKEN), mode, str(port)], port)


@contextlib.contextmanager
def reference(turn: int, bugs: list[str] | None = None) -> Iterator[str]:
    state, _ = state_and_history(SCENARIO, turn)
    server = make_server(App({"schema": msgspec.to_builtins(state), "bugs": bugs or []}), "127.0.0.1", 0)
    import threading

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


async def _run(suite: Suite, url: str, timeout: float = 5.0) -> SuiteResult:
    async with Http11Transport.for_url(url, timeout) as transport:
        return await run_suite(suite, transport)


def _suite(turn: int) -> Suite:
    state, history = state_and_history(SCENARIO, turn)
    return generate_suite(state, 7, turn, history)


@pytest.mark.parametrize("turn", [0, 15, 30])
async def test_reference_server_passes_over_http(turn: int) -> None:
    """The reference server, reached over real sockets, passes its turn's whole suite."""
    with reference(turn) as url:
        result = await _run(_suite(turn), url)
    assert result.passed, result.failures[:3]
    assert result.requests > len(result.results)


async def test_mutant_fails_with_request_and_response_excerpts() -> None:
    """A failing test carries the failing request, the response excerpt and the rule it checks."""
    with reference(0, ["accept-null"]) as url:
        result = await _run(_suite(0), url)
    fail = next(f for f in result.failures if f.name.endswith("_rejects_null"))
    assert fail.category == "validation" and fail.rule == "null"
    assert fail.request.startswith("POST /") and "null" in fail.request
    assert fail.status in (200, 201) and fail.response.startswith("{")


class _Recording:
    """A transport that keeps every request it forwards, byte for byte."""

    def __init__(self, inner: Http11Transport) -> None:
        self.inner, self.sent = inner, list[tuple[str, str, bytes | None, str | None]]()

    def request(
        self, method: str, path: str, body: bytes | None, content_type: str | None = JSON_TYPE
    ) -> tuple[int, bytes]:
        self.sent.append((method, path, body, content_type))
        return self.inner.request(method, path, body, content_type)


@pytest.mark.parametrize("bugs", [[], ["accept-null"]])
async def test_bodies_encoded_ahead_send_the_same_requests_and_judge_the_same(bugs: list[str]) -> None:
    """Bodies encoded ahead (`bodies`, as a keeping worker does) send the same bytes and get the same results."""
    suite = _suite(15)
    runs = []
    for sent in (None, bodies(suite)):
        with reference(15, bugs) as url, Http11Transport.for_url(url) as inner:
            recording = _Recording(inner)
            result = await anyio.to_thread.run_sync(lambda: run_suite_blocking(suite, recording, None, None, sent))  # noqa: B023
        runs.append((recording.sent, list(result.results)))
    assert runs[0] == runs[1]
    assert any(body is not None and content == JSON_TYPE for _, _, body, content in runs[0][0])
    assert bool(bugs) == any(not r.passed for r in runs[0][1])


def _tiny_suite(n: int = 3) -> Suite:
    tests = tuple(
        SuiteTest(
            name=f"t{i}",
            category="validation",
            rule="create",
            steps=(req("GET", "/x", checks=(Equals(("a",), 1),), why="x"),),
        )
        for i in range(n)
    )
    return Suite(seed=0, turn=0, tests=tests)


async def test_hanging_server_is_given_up_on_quickly() -> None:
    """A server that never answers fails the suite as server_crash after two timeouts, not one per test."""
    with broken("hang") as url:
        result = await _run(_tiny_suite(20), url, timeout=0.3)
    assert result.server_died and not result.passed
    assert result.requests == 2
    assert {r.category for r in result.results} == {"server_crash"}


async def test_huge_response_is_capped() -> None:
    """A response above the size cap fails the test instead of being read into memory."""
    with broken("huge") as url:
        result = await _run(_tiny_suite(1), url)
    assert "larger than" in result.results[0].message


async def test_non_json_response_fails_the_check() -> None:
    """A 200 whose body is not JSON fails a test that checks the body."""
    with broken("notjson") as url:
        result = await _run(_tiny_suite(1), url)
    assert "not JSON" in result.results[0].message


async def test_redirects_are_not_followed() -> None:
    """A redirect is a wrong status, never followed to another host."""
    with broken("redirect") as url:
        result = await _run(_tiny_suite(1), url)
    assert result.results[0].status == 302


async def test_server_dying_mid_suite_fails_the_rest_at_once() -> None:
    """When the server exits mid-suite, the remaining tests are failed as not run, without waiting."""
    with broken("die") as url:
        result = await _run(_tiny_suite(10), url, timeout=5.0)
    assert result.server_died
    assert len(result.results) == 10
    assert sum("not run" in r.message for r in result.results) >= 8
    assert result.seconds < 5.0  # no request waited out its timeout


async def test_500_is_classified_as_server_crash() -> None:
    """Any 5xx answer is a server crash, whatever the test checks."""
    with broken("echo500") as url:
        result = await _run(_tiny_suite(1), url)
    assert result.results[0].category == "server_crash"


@pytest.mark.parametrize("mode", ["chunked", "close", "eof", "idle-close"])
async def test_http_framings_and_dropped_keep_alive_connections_work(mode: str) -> None:
    """Chunked, close-delimited and Connection: close answers parse; a silently dropped connection is redialled."""
    with broken(mode) as url:
        result = await _run(_tiny_suite(3), url)
    assert result.passed, result.failures


async def test_bad_urls_are_refused() -> None:
    """Only plain http://host:port URLs are accepted by the suite transport."""
    for url in ("https://x:1", "http://x", "http://x:1/path", "ftp://x:1"):
        with pytest.raises(ValueError, match="not a plain"):
            Http11Transport.for_url(url)


async def test_a_cancelled_suite_interrupts_its_request_and_lets_go_of_the_transport() -> None:
    """Cancelling run_suite mid-request (a server that never answers) ends it at once; the thread let go first."""
    read = threading.Event()

    def serve(conn: Conn) -> None:
        conn.read_request()
        read.set()
        conn.read_request()  # never answers

    suite = _suite(0)
    with RawServer(serve).running() as server, Http11Transport.for_url(server.url, timeout=60.0) as transport:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_suite, suite, transport)
            assert await anyio.to_thread.run_sync(read.wait, 10)
            tg.cancel_scope.cancel()
        assert transport._sock is None  # the worker closed its connection before the cancel came through
    assert server.accepted == 1


async def test_the_suite_runs_off_the_event_loop_thread() -> None:
    """Requests are made from a worker thread, so a slow server never blocks the daemon's event loop."""
    seen: set[int] = set()

    class Recording:
        def request(
            self, method: str, path: str, body: bytes | None, content_type: str | None = None
        ) -> tuple[int, bytes]:
            seen.add(threading.get_ident())
            return 200, b"{}"

    await run_suite(_suite(0), Recording())
    assert seen and threading.get_ident() not in seen
