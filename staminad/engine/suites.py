"""Where an attempt's suite is made and run: in the daemon's worker processes, or in a thread of this one.

With a `WorkerPool` (the daemon's), generation and the suite's requests run in worker processes, off
the event loop's GIL; without one (`workers = 0`, in-process runs, tests), in a worker thread. Both
give the same suites and the same results. A worker lost twice under one job is the platform's
fault: it is raised as a `SandboxError` (`engine_error`), so the attempt is infra and retried,
never scored against the agent.

A scenario holds its latest attempt's suite in `AttemptSuites`: with a pool, the suite stays in the worker
that generated it (`KeptSuite`) and only its handle crosses the pipe when it runs; the one it replaces,
and the last when the scenario ends, is released there.
"""

from __future__ import annotations

import anyio.to_thread

from staminad.bench.schema import State
from staminad.sandbox.base import SandboxError
from staminad.suite.feedback import FeedbackLevel
from staminad.suite.generate import generate_suite
from staminad.suite.history import History
from staminad.suite.http11 import Http11Transport
from staminad.suite.model import Suite
from staminad.suite.pool import KeptSuite, WorkerLost, WorkerPool
from staminad.suite.runner import SuiteResult, run_suite
from staminad.suite.verdict import SuiteVerdict, verdict_of


async def make_suite(
    pool: WorkerPool | None, state: State, seed: int, turn: int, history: History | None, attempt: int
) -> Suite:
    """`generate_suite(...)` off the event loop: in a worker process, or in a thread without a pool."""
    if pool is None:
        return await anyio.to_thread.run_sync(generate_suite, state, seed, turn, history, attempt)
    try:
        return await pool.generate(state, seed, turn, history, attempt)
    except WorkerLost as exc:
        raise SandboxError(f"generating the suite: {exc}", "engine_error") from None


async def suite_on_server(pool: WorkerPool | None, suite: Suite, url: str, timeout: float) -> SuiteResult:
    """Run `suite` against the server at `url`, each request bounded by `timeout`; a cancel stops it (bounded)."""
    if pool is None:
        async with Http11Transport.for_url(url, timeout) as transport:
            return await run_suite(suite, transport)
    try:
        return await pool.run_suite(suite, url, timeout)
    except WorkerLost as exc:
        raise SandboxError(f"running the suite: {exc}", "engine_error") from None


class AttemptSuites:
    """The suite of a scenario's latest (turn, attempt), made once (it is pure: a retry or a resume gets the same)
    and kept where it runs: in a worker of `pool` (`KeptSuite`), or here without one. `close` releases it."""

    def __init__(self, pool: WorkerPool | None) -> None:
        self.pool = pool
        self._latest: tuple[int, int, Suite | KeptSuite] | None = None

    async def get(self, turn: int, attempt: int, state: State, seed: int, history: History | None) -> int:
        """Make the attempt's suite unless it is the one held (the one before is released); its number of tests."""
        if self._latest is None or self._latest[:2] != (turn, attempt):
            await self.close()
            self._latest = (turn, attempt, await self._make(state, seed, turn, history, attempt))
        suite = self._latest[2]
        return suite.tests if isinstance(suite, KeptSuite) else len(suite.tests)

    async def _make(
        self, state: State, seed: int, turn: int, history: History | None, attempt: int
    ) -> Suite | KeptSuite:
        if self.pool is None:
            return await make_suite(None, state, seed, turn, history, attempt)
        try:
            return await self.pool.keep(state, seed, turn, history, attempt)
        except WorkerLost as exc:
            raise SandboxError(f"generating the suite: {exc}", "engine_error") from None

    async def run(self, turn: int, attempt: int, url: str, timeout: float, feedback: FeedbackLevel) -> SuiteVerdict:
        """Run the held suite of (turn, attempt) (`get` first) against the server at `url`, to its verdict (made
        where it ran: in the worker, or here)."""
        assert self._latest is not None and self._latest[:2] == (turn, attempt), "the attempt's suite is made first"
        suite = self._latest[2]
        if isinstance(suite, Suite):
            return verdict_of(await suite_on_server(None, suite, url, timeout), feedback)
        assert self.pool is not None
        try:
            return await self.pool.run_kept(suite, url, timeout, feedback)
        except WorkerLost as exc:
            raise SandboxError(f"running the suite: {exc}", "engine_error") from None

    async def close(self) -> None:
        """Release the held suite (in its worker: that worker forgets it)."""
        latest, self._latest = self._latest, None
        if latest is not None and isinstance(latest[2], KeptSuite) and self.pool is not None:
            await self.pool.release(latest[2])
