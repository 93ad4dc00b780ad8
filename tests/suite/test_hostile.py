"""Nothing a server sends raises out of a suite: a fuzz over raw server bytes, and the nested-JSON server seen live.

Each example serves a list of raw answers (arbitrary bytes, or HTTP answers broken in head, framing or
JSON body), one per request in turn, over a real socket; the runner must return a result with every
test present, every failure categorised and every message short.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.kinds import CATEGORIES
from staminad.suite.feedback import render_feedback
from staminad.suite.generate import generate_suite
from staminad.suite.history import state_and_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.model import Absent, Equals, IsInteger, ListIds, Suite, req
from staminad.suite.model import Test as SuiteTest
from staminad.suite.runner import EXCERPT, SuiteResult, run_suite
from tests.helpers.rawserver import Conn, RawServer
from tests.suite.test_runner import SCENARIO

IDLE = 0.05  # seconds a scripted connection waits for the next request before closing (ends half-sent answers)
NESTED = b"[" * 100_000 + b"]" * 100_000  # the body seen live: valid JSON, 100,000 deep, 200 KB

Answer = tuple[bytes, bool]  # raw bytes written for one request, and whether the connection is closed after


def scripted(answers: list[Answer], idle: float | None = IDLE) -> Callable[[Conn], None]:
    """A server writing `answers` in turn, one per request, across connections; connections idle for `idle`
    seconds are closed (so that an answer shorter than it says ends at once, not at the client's timeout)."""
    turn = [0]

    def serve(conn: Conn) -> None:
        conn.sock.settimeout(idle)
        while conn.read_request() is not None:
            with conn.server.lock:
                raw, close = answers[turn[0] % len(answers)]
                turn[0] += 1
            conn.write(raw)
            if close:
                conn.sock.shutdown(socket.SHUT_WR)
                return

    return serve


# --- hostile JSON bodies ----------------------------------------------------------------------------

SCALARS = st.one_of(
    st.sampled_from(
        [b"null", b"true", b"NaN", b"-Infinity", b"1e999999", b"-0", b"0.1e-999999", b'"\\ud800"', b'"\\udfff\\u0000"']
    ),
    st.integers(1, 6000).map(lambda n: b"-" + b"9" * n),  # past 1,000 and past Python's 4,300-digit refusal
    st.integers(-(2**70), 2**70).map(lambda i: str(i).encode()),
    st.text(max_size=8).map(lambda s: json.dumps(s).encode()),
    st.binary(max_size=8),  # a broken token
)
KEYS = st.sampled_from([b'"id"', b'"a"', b'"name"', b'"b"'])
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: b"[" + b",".join(xs) + b"]"),
        st.lists(st.tuples(KEYS, inner), max_size=4).map(  # duplicate keys included
            lambda kv: b"{" + b",".join(k + b":" + v for k, v in kv) + b"}"
        ),
    ),
    max_leaves=10,
)


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    """Arrays or objects nested up to 100,000 deep, closed or not, maybe inside a normal-looking object."""
    depth = draw(st.integers(1, 100_000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'[{"id":', b"}]")]))
    inner = opener * depth + b"1" + (closer * depth if draw(st.booleans()) else b"")
    return b'{"id": "x", "a": ' + inner + b"}" if draw(st.booleans()) else inner


BODIES = st.one_of(JSON, deep(), st.binary(max_size=64), st.just(b"\xff\xfe{}"))

# --- hostile HTTP answers ---------------------------------------------------------------------------

STATUS_LINES = st.one_of(
    st.sampled_from([200, 201, 204, 400, 404, 409, 422, 500]).map(lambda s: f"HTTP/1.1 {s} X".encode()),
    st.sampled_from(
        [b"HTTP/1.0 200 OK", b"HTTP/1.1 101 Switching", b"HTTP/1.1 100 Continue", b"HTTP/1.1 304 X", b"HTTP/1.1 999"]
    ),
    st.sampled_from([b"HTTP/2 200 OK", b"HTTP/1.1 2000 X", b"HTTP/1.1 20", b"HTTP/1.1 \xb2\xb2\xb2", b"", b"\x00"]),
)
HEADERS = st.one_of(
    st.sampled_from(
        [
            b"Connection: close",
            b"Connection: keep-alive",
            b"Content-Type: application/json; charset=utf-16",
            b"Content-Type: text/html",
            b"Transfer-Encoding: gzip, chunked",
            b"Transfer-Encoding: identity",
            b"Content-Length: -1",
            b"Content-Length: 1, 2",
            b"Content-Length: \xb2",
            b"Content-Length: " + b"9" * 5000,
            b"Content-Length: " + b"0" * 5000 + b"1",
            b"no colon",
            b" : empty name",
            b"X-Long: " + b"a" * 9000,
        ]
    ),
    st.binary(max_size=24),
)


@st.composite
def answer(draw: st.DrawFn) -> bytes:
    """An HTTP answer broken in any of its parts: status line, headers, framing, body."""
    body = draw(BODIES)
    head = [draw(STATUS_LINES), *draw(st.lists(HEADERS, max_size=3))]
    framing = draw(st.sampled_from(["length", "short", "long", "chunked", "bad-chunk", "close", "none"]))
    if framing in ("length", "short", "long"):
        told = len(body) + {"length": 0, "short": -1, "long": 7}[framing]
        head.append(b"Content-Length: %d" % max(told, 0))
    elif framing in ("chunked", "bad-chunk"):
        head.append(b"Transfer-Encoding: chunked")
        size = b"%x" % len(body) if framing == "chunked" else draw(st.sampled_from([b"zz", b"f" * 40, b"-1", b""]))
        body = size + b"\r\n" + body + b"\r\n0\r\n" + draw(st.sampled_from([b"\r\n", b"T: x\r\n\r\n", b""]))
    elif framing == "close":
        head.append(b"Connection: close")
    return b"\r\n".join(head) + b"\r\n\r\n" + body


ANSWERS = st.lists(st.tuples(st.one_of(answer(), st.binary(max_size=128)), st.booleans()), min_size=1, max_size=5)

# --- the suites they are run against ---------------------------------------------------------------

TINY = Suite(
    seed=0,
    turn=0,
    tests=(
        SuiteTest(
            name="every_check",
            category="validation",
            rule="create",
            steps=(
                req("POST", "/a", {"x": 1}, checks=(Equals(("x",), 1), IsInteger(("x",)), Absent("y")), why="w"),
                req("GET", "/a", checks=(ListIds(("1", "2")),), why="w"),
                req("GET", "/a/1", checks=(Equals(("b", 0, "c"), [1.5, "s", None]),), why="w", action=True),
            ),
        ),
        SuiteTest(
            name="statuses_only",
            category="wrong_response_format",
            rule="delete",
            steps=(req("DELETE", "/a/1", expect=(204,), why="w"), req("GET", "/a/1", expect=(404,), why="w")),
        ),
    ),
)


def _real_suite(turn: int) -> Suite:
    state, history = state_and_history(SCENARIO, turn)
    return generate_suite(state, 7, turn, history)


def _run(suite: Suite, answers: list[Answer], idle: float | None = IDLE) -> SuiteResult:
    async def go() -> SuiteResult:
        with RawServer(scripted(answers, idle)).running() as server:
            async with Http11Transport.for_url(server.url, timeout=2.0) as transport:
                return await run_suite(suite, transport)

    return anyio.run(go, backend="asyncio")


def _assert_whole(suite: Suite, result: SuiteResult) -> None:
    """Every test present in order, every failure categorised with a short message, and the result storable."""
    assert [r.name for r in result.results] == [t.name for t in suite.tests]
    for r in result.failures:
        assert r.category in CATEGORIES, r
        assert 0 < len(r.message) < 2 * EXCERPT + 200 and len(r.response) <= EXCERPT + 3, r
    msgspec.json.encode(result)  # as the store writes it: no lone surrogate, nothing unencodable
    render_feedback(result, "detailed")


@pytest.mark.slow  # 150 examples of hostile bytes: ~4-5 s of CPU, over the fast tier's budget
@settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(answers=ANSWERS)
def test_no_bytes_a_server_sends_raise_out_of_a_suite(answers: list[Answer]) -> None:
    """Whatever the server writes (raw bytes, broken HTTP, hostile JSON), run_suite returns every test's verdict."""
    _assert_whole(TINY, _run(TINY, answers))


@pytest.mark.parametrize("reset_too", [True, False])
def test_the_nested_json_server_fails_every_test_as_a_bad_response(reset_too: bool) -> None:
    """A server answering deeply nested JSON fails every test as server_bad_response in one short line."""
    nested = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(NESTED) + NESTED
    reset = b"HTTP/1.1 204 No Content\r\n\r\n"
    suite = _real_suite(3)
    answers = [(nested, False)] if reset_too else [(reset, False), (nested, False)]
    result = _run(suite, answers, idle=None)  # complete answers only: no connection is closed under the client
    _assert_whole(suite, result)
    assert not result.server_died and len(result.failures) == len(suite.tests)
    assert {r.category for r in result.results} == {"server_bad_response"}
    assert all(r.message.endswith("the body is nested deeper than 64 levels") for r in result.results)
    assert {r.step for r in result.results} == ({-1} if reset_too else {0})
