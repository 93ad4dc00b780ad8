"""Algorithm 1 for one scenario, as a resumable state machine over the attempts recorded in the store.

Position (turn, attempt, infra try) is always derived from the store, never kept only in memory:
a daemon killed at any point resumes by replaying the rows. A row goes `launched` (prompt written,
harness started) -> `harness_done` (marker seen) -> `tested` (suite ran, outcome recorded); each
transition is committed before the next step starts, so nothing runs twice and nothing is lost.

The attempt's two phases are `engine.harnessphase` and `engine.suitephase`; what they share is
`engine.runbase`'s.
"""

from __future__ import annotations

import contextlib
import time

import anyio
import msgspec

from protocol.events import AttemptStarted, InfraFailure, ScenarioFinished
from protocol.kinds import InfraKind
from staminad.bench.texts import render_spec
from staminad.engine.harnessphase import HarnessPhase
from staminad.engine.position import Position, position
from staminad.engine.runbase import OUTAGE_KINDS
from staminad.engine.suitephase import SuitePhase
from staminad.sandbox.base import SandboxError
from staminad.sandbox.codekeep import job_id
from state.store import AttemptRow, Verdict

CLEANUP_TIMEOUT = 90.0  # bound on removing what is left of a lost sandbox
RECREATE_AFTER = ("sandbox_lost", "sandbox_exited", "engine_error")


class ScenarioRunner(HarnessPhase, SuitePhase):
    """One scenario's attempts, driven to its verdict from what the store recorded."""

    def _job_id(self, pos: Position) -> str:
        return job_id(pos.turn, pos.attempt, pos.infra_try)

    # --- the loop -----------------------------------------------------------------------------

    async def run(self, scenario_id: int, infra_grant: int = 0) -> Position:
        """Drive the scenario to its verdict; `infra_grant` extends the infra retry budget (operator retry).

        The next attempt's suite is made in a background task of the run (`_make_ahead`), cancelled at its end.
        """
        failed: Exception | None = None
        try:
            async with anyio.create_task_group() as tg:
                self._background = tg
                try:
                    pos = await self._drive(scenario_id, infra_grant)
                except Exception as exc:  # noqa: BLE001 - re-raised below as itself, not as a group of one
                    failed = exc
                finally:
                    self._background = None
                    tg.cancel_scope.cancel()
        finally:
            await self._suites.close()  # the worker keeping its last suite forgets it
        if failed is not None:
            raise failed
        return pos

    async def _drive(self, scenario_id: int, infra_grant: int) -> Position:
        n_turns = self._turns.turns
        marked = False  # recorded as running: only once past the gate, since one held at a pause runs nothing
        while True:
            rows = await self.store.latest_turn_attempts(scenario_id)  # not every row: flat cost per step
            pos = position(
                rows,
                n_turns,
                self.spec.retries,
                self.settings.infra_retries + infra_grant,
                turns_passed=await self.store.turns_passed(scenario_id),
            )
            if pos.final is None and pos.resume is None and self.llm is not None and self.llm.capped:
                pos = msgspec.structs.replace(pos, final="capped", reason=self.llm.capped)
            if pos.final is None and pos.resume is None and self.outage_over:
                # Its engine did not answer within the outage budget: ended, unscored and re-runnable (`retry`).
                pos = msgspec.structs.replace(pos, final="infra_failed", reason=self.outage_over)
            if pos.final is not None:
                await self.store.set_scenario_status(
                    scenario_id, pos.final, turns_passed=pos.turns_passed, reason=pos.reason
                )
                self.emit(
                    ScenarioFinished(
                        **self._names(scenario_id), status=pos.final, turns_passed=pos.turns_passed, reason=pos.reason
                    )
                )
                return pos
            await self.store.set_turns_passed(scenario_id, pos.turns_passed)
            row = pos.resume
            if row is None and self.gate is not None:
                await self.gate.wait()
            if not marked:
                await self.store.set_scenario_status(scenario_id, "running")
                marked = True
            if self.gate is not None:
                self.gate.enter()
            try:
                if row is None:
                    prompt = pos.prompt if pos.prompt is not None else (await self._turn(pos.turn)).prompt
                    row = await self.store.begin_attempt(
                        scenario_id, pos.turn, pos.attempt, pos.infra_try, pos.prompt_kind, prompt
                    )
                await self._execute(scenario_id, row, pos)
            finally:
                if self.gate is not None:
                    self.gate.leave()

    async def _ensure_sandbox(self, scenario_id: int, phase: str) -> None:
        """Prepare (or, after a loss, recreate) the sandbox; the workspace and its files are kept.

        Where it is now is recorded again: a sandbox over several engines may have moved to another.
        """
        if self._ready_at is not None:
            return
        await self.sandbox.prepare()
        await self.store.set_sandbox(scenario_id, self.sandbox.describe())
        if self.sandbox.restored and phase != "launched":
            # The harness ran on the workspace that was lost; its snapshot predates that work: run it again.
            raise SandboxError(
                "the sandbox's workspace was lost after its harness ran and was put back from its last snapshot, "
                "so the attempt runs again",
                "sandbox_lost",
            )
        await self.sandbox.seed(
            {"README.md": self.spec.readme, "initial_specification.md": render_spec(self.spec.scenario.initial())}
        )
        self._ready_at = time.time()

    async def _execute(self, scenario_id: int, row: AttemptRow, pos: Position) -> None:
        """One attempt; whatever the sandbox or the engine does wrong ends it as that platform fault, never
        as an error of the whole sweep."""
        job = self._job_id(pos)
        if row.phase == "launched" and pos.resume is not None:
            # Taken up again after a restart: the turn watchdog runs from now, as it runs from a fresh
            # attempt's launch, and the monitor counts down from this event for both (see `watchdog_deadline`).
            row = msgspec.structs.replace(row, resumed_at=await self.store.resumed(row.id))
        self.emit(
            AttemptStarted(
                **self._names(scenario_id),
                turn=row.turn,
                attempt=row.attempt,
                infra_try=row.infra_try,
                resumed=pos.resume is not None,
            )
        )
        try:
            await self._ensure_sandbox(scenario_id, row.phase)
            if row.phase == "launched":
                infra = await self._harness_and_suite(scenario_id, row, job)
                if infra is not None:
                    await self._infra(scenario_id, row, infra[0], infra[1])
                    return
            await self._test(scenario_id, row)
        except SandboxError as exc:
            await self._infra(scenario_id, row, exc.kind, str(exc))

    async def _harness_and_suite(self, scenario_id: int, row: AttemptRow, job: str) -> tuple[InfraKind, str] | None:
        """`_harness`, with the turn's suite made meanwhile in the background (so it is ready when the marker
        comes, or soon after: the test step starts the server before it waits for it); usually it was made
        ahead already, when the attempt before was tested.

        Making starts once the harness is launched: made at the same moment, its CPU (a thread's GIL, or a
        worker's core on a busy box) would delay the launch, which is on the turn's critical path and it is not.
        """
        launched = anyio.Event()
        lost: SandboxError | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._prefetch, row.turn, row.attempt, launched)
            try:
                infra = await self._harness(scenario_id, row, job, launched)
            except SandboxError as exc:  # raised below, not as a group of one
                lost, infra = exc, None
            finally:
                launched.set()  # a harness phase that ended before its launch: the test step may still want it
        if lost is not None:
            raise lost
        return infra

    async def _prefetch(self, turn: int, attempt: int, launched: anyio.Event) -> None:
        """Once the harness runs, have the attempt's suite made in the background (`_make_ahead`; nothing new
        when it was made ahead already)."""
        await launched.wait()
        self._make_ahead(turn, attempt)

    async def _infra(self, scenario_id: int, row: AttemptRow, kind: InfraKind, detail: str) -> None:
        """Record the attempt as an infra failure, unless its engine stopped answering: then the scenario waits
        for it (no retry spent) and the loop takes the attempt up again where it was."""
        if kind in OUTAGE_KINDS and await self.ride_out():
            return
        if self.outage_over:
            kind, detail = "engine_error", self.outage_over
        await self.store.infra_event(scenario_id, row.turn, row.attempt, kind, detail)
        await self.store.tested(row.id, Verdict(outcome="infra", infra_kind=kind))
        self.emit(
            InfraFailure(
                **self._names(scenario_id),
                turn=row.turn,
                attempt=row.attempt,
                infra_try=row.infra_try,
                infra_kind=kind,
                detail=detail,
            )
        )
        if kind in RECREATE_AFTER:
            # The container is gone, frozen or unreachable: remove what is left, so the retry gets a fresh one
            # on the same workspace (a paused container cannot even be exec'd into to clean up).
            self._ready_at = None
            with anyio.CancelScope(shield=True), contextlib.suppress(SandboxError, OSError):
                with anyio.move_on_after(CLEANUP_TIMEOUT):
                    await self.sandbox.close()
