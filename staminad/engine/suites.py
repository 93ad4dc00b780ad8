"""Where an attempt's suite is made and run: in the daemon's worker processes, or in a thread of this one.

With a `WorkerPool` (the daemon's), generation and the suite's requests run in worker processes, off
the event loop's GIL; without one (`workers = 0`, in-process runs, tests), in a worker thread. Both
give the same suites and the same results. A worker lost twice under one job is the platform's
fault: it is raised as a `SandboxError` (`engine_error`), so the attempt is infra and retried,
never scored against the agent.

A scenario holds its latest attempt's suite in `AttemptSuites`: with a pool, the suite stays in the worker
that generated it (`KeptSuite`) and only its handle crosses the pipe when it runs; the one it replaces,
and the last when the scenario ends, is released there. It may also hold suites made ahead (`ahead`): the next
turn's, started as this attempt's suite starts to run where a second worker can make it (`overlaps`), else once it
has run, and this turn's retry after a failure, so that generation (hundreds of ms at turn 1,000) overlaps the suite's
run, the teardown, the next launch, the harness and the server start instead of following a fast harness.
"""

from __future__ import annotations

import anyio
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


class _Ahead:
    """A suite being made ahead of its attempt: `suite` once `done` (None: its making failed or was cancelled)."""

    def __init__(self, turn: int, attempt: int) -> None:
        self.key = (turn, attempt)
        self.done = anyio.Event()
        self.suite: Suite | KeptSuite | None = None


class AttemptSuites:
    """The suite of a scenario's latest (turn, attempt), made once (it is pure: a retry or a resume gets the same)
    and kept where it runs: in a worker of `pool` (`KeptSuite`), or here without one; and those made ahead for
    attempts expected later (`AHEAD` at most: the next turn's first, and a retry of this turn). `close` releases
    them all."""

    AHEAD = 2  # suites made ahead at most: the next turn's (made while this one runs) and this turn's retry

    def __init__(self, pool: WorkerPool | None) -> None:
        self.pool = pool
        self._latest: tuple[int, int, Suite | KeptSuite] | None = None
        self._ahead: dict[tuple[int, int], _Ahead] = {}

    @property
    def overlaps(self) -> bool:
        """Whether a suite can be made while another runs without slowing it: in a pool of two workers or more,
        the least busy one makes it (a thread of the same process would take the GIL from the run's requests)."""
        return self.pool is not None and self.pool.size >= 2

    async def get(self, turn: int, attempt: int, state: State, seed: int, history: History | None) -> int:
        """Make the attempt's suite unless it is the one held or made ahead (the one before is released, and any
        made ahead for an attempt before this one); its number of tests."""
        if self._latest is None or self._latest[:2] != (turn, attempt):
            made = await self._take_ahead(turn, attempt)
            await self._release(self._latest)
            self._latest = None
            for key in [k for k in self._ahead if k < (turn, attempt)]:
                await self._drop(self._ahead.pop(key))
            if made is None:
                made = await self._make(state, seed, turn, history, attempt)
            self._latest = (turn, attempt, made)
        suite = self._latest[2]
        return suite.tests if isinstance(suite, KeptSuite) else len(suite.tests)

    async def ahead(self, turn: int, attempt: int, state: State, seed: int, history: History | None) -> None:
        """Make (turn, attempt)'s suite now, for a later `get` to take (run it in a task of its own: `get` waits
        for it, and makes the suite itself if this failed). A platform fault here is left for `get` to meet.
        Nothing is made for an attempt held or being made, or one before the held one; at most `AHEAD` are made
        ahead (the earliest goes first)."""
        key = (turn, attempt)
        if key in self._ahead or (self._latest is not None and key <= self._latest[:2]):
            return
        while len(self._ahead) >= self.AHEAD:
            await self._drop(self._ahead.pop(min(self._ahead)))
        slot = self._ahead[key] = _Ahead(turn, attempt)
        try:
            slot.suite = await self._make(state, seed, turn, history, attempt)
        except SandboxError:
            pass  # `get` makes it again, and meets (and records) the fault itself
        finally:
            slot.done.set()
        if self._ahead.get(key) is not slot:  # closed (or dropped) while it was made
            await self._release(None if slot.suite is None else (turn, attempt, slot.suite))

    async def _take_ahead(self, turn: int, attempt: int) -> Suite | KeptSuite | None:
        """The suite made ahead for (turn, attempt), waited for if it is still being made; None if there is none."""
        slot = self._ahead.get((turn, attempt))
        if slot is None:
            return None
        await slot.done.wait()
        self._ahead.pop((turn, attempt), None)
        return slot.suite

    async def _drop(self, slot: _Ahead) -> None:
        """Release a suite made ahead that is no longer wanted (one still being made is released by its task)."""
        if slot.done.is_set() and slot.suite is not None:
            await self._release((*slot.key, slot.suite))

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
        """Release the held suites (in their worker: that worker forgets them); one still being made ahead is
        released by its task once made."""
        latest, self._latest = self._latest, None
        slots, self._ahead = list(self._ahead.values()), {}
        await self._release(latest)
        for slot in slots:
            await self._drop(slot)

    async def _release(self, held: tuple[int, int, Suite | KeptSuite] | None) -> None:
        if held is not None and isinstance(held[2], KeptSuite) and self.pool is not None:
            await self.pool.release(held[2])
