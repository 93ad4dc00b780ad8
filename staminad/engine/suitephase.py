"""The suite phase of an attempt: start the agent's server, run the suite against it, record the verdict.

A server that does not start or answer is the agent's failure (it consumes R); a sandbox lost or
frozen while the suite runs is the platform's, raised as a `SandboxError` for the loop to record as
infra. After each tested attempt the workspace is snapshotted and its code kept for diffs.
"""

from __future__ import annotations

import contextlib
import logging
import time

import anyio

from protocol.events import AttemptTested, SuiteStarted
from staminad.engine.blame import server_feedback
from staminad.engine.runbase import RunnerBase
from staminad.sandbox.base import NotReady, SandboxError
from staminad.sandbox.codekeep import job_id
from staminad.suite.verdict import SuiteVerdict
from state.store import AttemptRow, Verdict

log = logging.getLogger(__name__)

SERVER_LOG_TAIL = 4000  # bytes of a server start's log kept with its attempt


class SuitePhase(RunnerBase):
    """An attempt from its harness's marker to its recorded verdict."""

    async def _test(self, scenario_id: int, row: AttemptRow) -> None:
        if self.suites is None:
            await self._test_now(scenario_id, row)
        else:
            async with self.suites:
                await self._test_now(scenario_id, row)
        await self._snapshot(row)

    async def _snapshot(self, row: AttemptRow) -> None:
        """A sandbox off the daemon's disk sends its workspace back after each tested attempt (bounded); then
        every sandbox keeps the attempt's code, which the diffs between attempts read (see `sandbox.codekeep`)."""
        try:
            snap = await self.sandbox.snapshot()
        except SandboxError as exc:
            await self.store.snapshot_taken(row.id, None, f"snapshot failed: {exc}"[:300])
        else:
            if snap is not None:
                await self.store.snapshot_taken(row.id, snap.size, snap.skipped)
        job = job_id(row.turn, row.attempt, row.infra_try)
        try:
            await self.sandbox.keep_code(job)
        except (SandboxError, OSError) as exc:  # the diff then says none was kept; never the attempt's failure
            log.warning("the code of %s (scenario %s) was not kept: %s", job, row.scenario_id, exc)

    async def _test_now(self, scenario_id: int, row: AttemptRow) -> None:
        """Start the server (while the suite may still be being made, see `_harness_and_suite`), run the suite
        against it, record the verdict; the next attempt's suite is started meanwhile (`_make_ahead`): the next
        turn's as the suite starts where another worker can make it, else (and a retry's) once it has run."""
        t0 = time.monotonic()
        try:
            handle = await self.sandbox.start_server(self.settings.server_start_timeout, self.settings.request_timeout)
        except NotReady as exc:
            t1 = time.monotonic()
            tests = await self._suite_for(row.turn, row.attempt)  # its number of tests, for the verdict
            loss = await self._loss(row)
            if loss is not None:  # the server did not start because the sandbox went: the platform's fault
                raise SandboxError(f"{loss.detail} while the server started", loss.kind) from None
            await self._server_failed(scenario_id, row, exc, tests, t1 - t0)
            return
        t1 = time.monotonic()
        try:
            await self._suite_for(row.turn, row.attempt)  # made by now, unless the harness was faster than that
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(SandboxError):
                await self.sandbox.stop_server(handle)
            raise
        suite_began, t_run = time.time(), time.monotonic()  # the wait for the suite is the engine's own time
        self.emit(SuiteStarted(**self._names(scenario_id), turn=row.turn, attempt=row.attempt, server_seconds=t1 - t0))
        try:
            timeout, level = self.settings.request_timeout, self.spec.feedback
            if self._suites.overlaps:  # the next turn's suite, made by another worker while this one runs
                self._make_ahead(*self._next_attempt(row, failed=False))
            result = await self._suites.run(row.turn, row.attempt, handle.url, timeout, level)
            self._make_ahead(*self._next_attempt(row, result.failed > 0))
        finally:
            t2 = time.monotonic()
            with anyio.CancelScope(shield=True), contextlib.suppress(SandboxError):
                await self.sandbox.stop_server(handle)  # a failure here is judged by the health check below
        t3 = time.monotonic()
        loss = await self._loss(row)
        if loss is not None:  # lost while tested: the failures are the platform's, not the agent's
            raise SandboxError(f"{loss.detail} while the suite ran", loss.kind)
        if result.failed and (why := await self.sandbox.frozen(suite_began)):
            # Paused and resumed while tested: requests that timed out meanwhile are not the server's failures.
            raise SandboxError(f"{why} while the suite ran", "sandbox_lost")
        await self._record(scenario_id, row, result, server=t1 - t0, suite=t2 - t_run, teardown=t3 - t2)

    async def _record(
        self, scenario_id: int, row: AttemptRow, result: SuiteVerdict, server: float, suite: float, teardown: float
    ) -> None:
        """Store the tested attempt's verdict (with its phases' seconds and its server's log) and announce it."""
        await self.store.tested(
            row.id,
            Verdict(
                compressed=result.results,
                outcome="fail" if result.failed else "pass",
                categories=result.categories,
                passed_tests=result.tests - result.failed,
                total_tests=result.tests,
                feedback=result.feedback,
                server_seconds=server,
                suite_seconds=suite,
                teardown_seconds=teardown,
                server_log=await self._server_log(),
            ),
        )
        self.emit(
            AttemptTested(
                **self._names(scenario_id),
                turn=row.turn,
                attempt=row.attempt,
                passed=result.passed,
                failed_tests=result.failed,
                tests=result.tests,
                categories=result.categories,
                suite_seconds=suite,
                server_seconds=server,
            )
        )

    def _next_attempt(self, row: AttemptRow, failed: bool) -> tuple[int, int]:
        """The attempt expected after this one: the next turn's first after a pass, this turn's next after a
        failure (one past the last retry: none, `_make_ahead` skips it)."""
        if not failed:
            return row.turn + 1, 1
        return (row.turn, row.attempt + 1) if row.attempt <= self.spec.retries else (-1, 0)

    async def _server_log(self) -> str:
        """The tail of this server start's log, kept with the attempt it tested (the next start overwrites it)."""
        return await self.sandbox.server_log(SERVER_LOG_TAIL)

    async def _server_failed(
        self, scenario_id: int, row: AttemptRow, exc: NotReady, tests: int, seconds: float
    ) -> None:
        """The agent's server did not start or answer: a scored failure of its kind that consumes R."""
        log = await self._server_log()
        feedback = server_feedback(exc.kind, str(exc), log, self.spec.feedback)
        await self.store.tested(
            row.id,
            Verdict(
                outcome="fail",
                categories=(exc.kind,),
                passed_tests=0,
                total_tests=tests,
                feedback=feedback,
                server_seconds=seconds,
                server_log=log,
            ),
        )
        self.emit(
            AttemptTested(
                **self._names(scenario_id),
                turn=row.turn,
                attempt=row.attempt,
                passed=False,
                failed_tests=tests,
                tests=tests,
                categories=(exc.kind,),
                suite_seconds=0.0,
                server_seconds=seconds,
                detail=str(exc),
            )
        )
