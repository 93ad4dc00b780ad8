"""Where an attempt's suite is made and run: in the daemon's worker processes, or in a thread of this one.

With a `WorkerPool` (the daemon's), generation and the suite's requests run in worker processes, off
the event loop's GIL; without one (`workers = 0`, in-process runs, tests), in a worker thread. Both
give the same suites and the same results. A worker lost twice under one job is the platform's
fault: it is raised as a `SandboxError` (`engine_error`), so the attempt is infra and retried,
never scored against the agent.
"""

from __future__ import annotations

import anyio.to_thread

from staminad.bench.schema import State
from staminad.sandbox.base import SandboxError
from staminad.suite.generate import generate_suite
from staminad.suite.history import History
from staminad.suite.http11 import Http11Transport
from staminad.suite.model import Suite
from staminad.suite.pool import WorkerLost, WorkerPool
from staminad.suite.runner import SuiteResult, run_suite


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
