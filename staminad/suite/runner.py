"""Runs a suite against one server: tests in order, `POST /reset` before each, every request bounded.

Requests to one server are strictly sequential (the texts promise no concurrency safety). The tests
run in a worker thread over a blocking transport (`run_suite`; `run_suite_blocking` is the same
without the thread): the daemon gets its fan-out by running many servers' suites at once, a thread
each, while its event loop stays free (why blocking: `http11`). A dead server is detected
(connection refused, or the caller's `alive` probe) and the remaining tests are failed at once
instead of each waiting out a timeout. Cancelling `run_suite` interrupts the request in flight and
returns once the thread has stopped, so the caller can stop the server and close the connection.

Nothing a server sends raises out of a suite: an answer the runner cannot use (malformed HTTP, a body
that is not JSON, nested too deep, a number too long: `jsonbody`) fails that test as
`server_bad_response`, with a short message; every message quoting the server's data is bounded.
An exception that still escapes is a bug of ours, for the engine to contain (see `engine.contain`).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Protocol, runtime_checkable

import anyio.from_thread
import msgspec

from protocol.kinds import Category
from staminad.suite.jsonbody import Unusable, decode, screen
from staminad.suite.model import JSON_TYPE, Absent, Check, Equals, IsInteger, ListIds, Step, Suite, Test
from staminad.suite.offload import GRACE, run_in_thread

MAX_RESPONSE_BYTES = 1 << 20
EXCERPT = 300
QUOTED = 200  # characters of a server's value quoted in a message
_DEAD_AFTER_TIMEOUTS = 2


class TransportError(Exception):
    """The request got no usable HTTP response: refused, reset, timed out, or `bad` (malformed or too large)."""

    def __init__(self, message: str, *, refused: bool = False, timeout: bool = False, bad: bool = False) -> None:
        super().__init__(message)
        self.refused = refused
        self.timeout = timeout
        self.bad = bad


class Transport(Protocol):
    """Sends one request and returns (status, body), blocking; raises TransportError when no response came."""

    def request(
        self, method: str, path: str, body: bytes | None, content_type: str | None = JSON_TYPE
    ) -> tuple[int, bytes]: ...


@runtime_checkable
class Interruptible(Transport, Protocol):
    """A transport whose request in flight another thread can end (`Http11Transport`); `timeout` bounds one request."""

    timeout: float

    def interrupt(self) -> None: ...


class TestResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    __test__: ClassVar[bool] = False  # not a pytest test class

    name: str
    category: Category
    rule: str
    passed: bool
    message: str = ""
    step: int = -1
    request: str = ""
    status: int | None = None
    response: str = ""


class SuiteResult(msgspec.Struct, frozen=True, kw_only=True):
    seed: int
    turn: int
    results: tuple[TestResult, ...]
    seconds: float
    requests: int
    server_died: bool = False

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> list[TestResult]:
        return [r for r in self.results if not r.passed]


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        try:
            return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)
        except OverflowError:  # an integer too large for a float (a server's 10**400): only equal is close
            return actual == expected
    if isinstance(expected, list) and isinstance(actual, list):
        return len(actual) == len(expected) and all(_same(a, e) for a, e in zip(actual, expected, strict=True))
    return bool(actual == expected) and type(actual) is type(expected)


_MISSING = object()


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        if isinstance(key, str) and isinstance(value, dict):
            value = value.get(key, _MISSING)
        elif isinstance(key, int) and isinstance(value, list) and -len(value) <= key < len(value):
            value = value[key]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def check_failure(check: Check, doc: Any) -> tuple[str, bool] | None:
    """Why `doc` fails `check` (and whether a key was missing), or None when it passes."""
    if isinstance(check, Equals):
        got = _at(doc, check.path)
        if got is not _MISSING and _same(got, check.value):
            return None  # the common case: nothing to word
        where = ".".join(map(str, check.path))
        if got is _MISSING:
            return f"`{where}` is missing, expected {_quote(check.value)}", True
        return f"`{where}` is {_quote(got)}, expected {_quote(check.value)}", False
    if isinstance(check, Absent):
        if isinstance(doc, dict) and check.key in doc:
            return f"`{check.key}` must not be in the response any more", False
        return None
    if isinstance(check, IsInteger):
        got = _at(doc, check.path)
        if isinstance(got, bool) or not isinstance(got, int):
            return f"`{'.'.join(map(str, check.path))}` must be an integer, got {_quote(got)}", False
        return None
    assert isinstance(check, ListIds)
    if not isinstance(doc, list) or not all(isinstance(o, dict) for o in doc):
        return "expected a JSON array of objects", False
    ids = sorted(str(o.get("id")) for o in doc)
    if ids != sorted(check.ids):
        return f"listed ids {_clip(str(ids), QUOTED)}, expected {_clip(str(sorted(check.ids)), QUOTED)}", False
    return None


def _clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with any lone surrogate (a server's escaped `\\ud800`) made printable."""
    text = text if len(text) <= limit else text[:limit] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _quote(value: Any) -> str:
    """A JSON value as a message quotes it: bounded however large the server's value (its depth is bounded)."""
    return _clip(json.dumps(value), QUOTED)


def _excerpt(data: bytes | str) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return _clip(text, EXCERPT)


def _category(test: Test, step: Step, status: int | None, missing_key: bool, unusable: bool) -> Category:
    if unusable:
        return "server_bad_response"
    if status is None or status >= 500:
        return "server_crash"
    if status in (404, 405) and not set(step.expect) & {404, 405}:
        return "wrong_endpoint" if step.action else "missing_feature"
    if missing_key and test.category == "wrong_response_format":
        return "missing_feature"
    return test.category


class _Dead(Exception):
    pass


_RESET = Step(method="POST", path="/reset", expect=(200, 204), why="POST /reset must succeed")


def _shown(step: Step, body: bytes | None) -> str:
    """The request as a failure shows it (built only for a failure: most requests pass)."""
    return f"{step.method} {step.path}" + (f" {_excerpt(body)}" if body is not None else "")


def _judge(step: Step, status: int, raw: bytes) -> tuple[str, bool, bool, str] | None:
    """Why an answer fails `step` (and whether a key was missing, whether it was unusable, the rule of the failing
    check when it names one); None when it passes."""
    try:
        if status not in step.expect or not step.checks:
            screen(raw)  # a bound every answer keeps, read or not (see `jsonbody.screen`); `decode` screens too
            if status not in step.expect:
                return f"returned {status}, expected {' or '.join(map(str, step.expect))}", False, False, ""
            return None
        doc = decode(raw)
    except Unusable as exc:
        return f"returned a response that cannot be used: {exc}", False, True, ""
    for check in step.checks:
        found = check_failure(check, doc)
        if found:
            return found[0], found[1], False, check.rule if isinstance(check, Equals) else ""
    return None


def encoded(step: Step) -> bytes | None:
    """The body `step` sends: `raw` as it is, else its JSON (None: no body)."""
    if step.raw is not None:
        return step.raw
    return json.dumps(step.body).encode() if step.has_body else None


Bodies = tuple[tuple[bytes | None, ...], ...]  # each test's step bodies as sent, `encoded` ahead (`bodies`)


def bodies(suite: Suite) -> Bodies:
    """Every step's body as sent, encoded once when the suite is made (a worker keeping it does this while the
    harness works), so that encoding JSON is not on the path from one answer to the next request."""
    return tuple(tuple(encoded(step) for step in test.steps) for test in suite.tests)


def _run_test(
    test: Test, transport: Transport, counter: list[int], sent: tuple[bytes | None, ...] | None
) -> TestResult:
    """One test: reset, then each step (its body from `sent` when encoded ahead); the first failing step decides."""
    for index, step in enumerate((_RESET, *test.steps)):
        body = None if index == 0 else sent[index - 1] if sent is not None else encoded(step)
        content_type = step.content_type if step.raw is not None else JSON_TYPE
        counter[0] += 1
        try:
            status, raw = transport.request(step.method, step.path, body, content_type)
        except TransportError as exc:
            result = TestResult(
                name=test.name,
                category="server_bad_response" if exc.bad else "server_crash",
                rule=test.rule,
                passed=False,
                step=index - 1,
                request=_shown(step, body),
                message=f"{step.why}: {_clip(str(exc), EXCERPT)}",
            )
            if exc.refused or exc.timeout:
                raise _Dead(result, exc.refused) from None
            return result
        judged = _judge(step, status, raw)
        if judged is not None:
            fail, missing, unusable, rule = judged
            return TestResult(
                name=test.name,
                category=_category(test, step, status, missing, unusable),
                rule=rule or test.rule,
                passed=False,
                step=index - 1,
                request=_shown(step, body),
                status=status,
                response=_excerpt(raw),
                message=f"{step.why}: {step.method} {step.path} {fail}",
            )
    return TestResult(name=test.name, category=test.category, rule=test.rule, passed=True)


def run_suite_blocking(
    suite: Suite,
    transport: Transport,
    alive: Callable[[], bool] | None = None,
    stop: threading.Event | None = None,
    sent: Bodies | None = None,
) -> SuiteResult:
    """Run every test in order in this thread; stop early (failing the rest) once the server is gone or on `stop`.

    `sent`: the suite's `bodies`, when they were encoded ahead; else each is encoded as its request goes out.
    """
    start = time.perf_counter()
    results: list[TestResult] = []
    counter = [0]
    died = False
    timeouts = 0
    for i, test in enumerate(suite.tests):
        if stop is not None and stop.is_set():
            results += [
                TestResult(
                    name=t.name,
                    category="server_crash",
                    rule=t.rule,
                    passed=False,
                    message="not run: the suite was stopped",
                )
                for t in suite.tests[i:]
            ]
            break
        try:
            results.append(_run_test(test, transport, counter, sent[i] if sent is not None else None))
            timeouts = 0
            continue
        except _Dead as dead:
            result, refused = dead.args
            results.append(result)
            timeouts = 0 if refused else timeouts + 1
        gone = refused or timeouts >= _DEAD_AFTER_TIMEOUTS
        if alive is not None and not (stop is not None and stop.is_set()):
            gone = gone or not alive()
        if gone:
            died = True
            why = "the server stopped answering" if not refused else "the server is not running (connection refused)"
            results += [
                TestResult(name=t.name, category="server_crash", rule=t.rule, passed=False, message=f"not run: {why}")
                for t in suite.tests[i + 1 :]
            ]
            break
    return SuiteResult(
        seed=suite.seed,
        turn=suite.turn,
        results=tuple(results),
        seconds=time.perf_counter() - start,
        requests=counter[0],
        server_died=died,
    )


async def run_suite(
    suite: Suite, transport: Transport, alive: Callable[[], Awaitable[bool]] | None = None, sent: Bodies | None = None
) -> SuiteResult:
    """Run every test in order in a worker thread; stop early (failing the rest) once the server is gone.

    `alive` is awaited on the event loop when a request timed out or was refused; `sent` as in
    `run_suite_blocking`. On cancellation the thread is told to stop and the transport's request in
    flight is interrupted (when it can be); this returns only after the thread has let go of the transport.
    """
    stop = threading.Event()

    async def ask() -> bool:
        assert alive is not None
        return await alive()

    def probe() -> bool:
        return anyio.from_thread.run(ask)

    def interrupt() -> None:
        stop.set()
        if isinstance(transport, Interruptible):
            transport.interrupt()

    # Interrupted, a request ends at once; one that somehow is not ends within its own budget.
    grace = transport.timeout + 5.0 if isinstance(transport, Interruptible) else GRACE
    return await run_in_thread(
        lambda: run_suite_blocking(suite, transport, probe if alive else None, stop, sent), interrupt, grace
    )
