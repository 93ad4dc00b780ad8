"""What every phase of a scenario's run works with.

`RunnerBase` holds a run's spec (`engine.spec`) and runtime parts, the current turn (`engine.turns`),
the attempt suites, and the few questions each phase asks: is the sandbox lost, what do its events
start with, what environment does the harness get. The phases (`engine.harnessphase`,
`engine.suitephase`) and the loop that drives them (`engine.scenario`) build on it.
"""

from __future__ import annotations

import time
from typing import TypedDict

import anyio
import anyio.abc

from staminad.agents.base import Adapter
from staminad.engine.access import ModelAccess
from staminad.engine.gate import Gate
from staminad.engine.markers import MarkerWatcher
from staminad.engine.spec import EngineSettings, EventSink, ScenarioSpec
from staminad.engine.suites import AttemptSuites
from staminad.engine.turns import Turn, TurnCursor
from staminad.sandbox.base import Loss, Sandbox, SandboxError
from staminad.sandbox.outage import OutageOver
from staminad.suite.pool import WorkerPool
from state.store import AttemptRow, Store

OUTAGE_KINDS = ("sandbox_lost", "engine_error")  # the platform faults an engine that stopped answering causes


class _Names(TypedDict):
    scenario: int
    configuration: str
    seed: int


class RunnerBase:
    """The parts and per-turn texts a scenario's run works with; the phases and the loop are its subclasses."""

    def __init__(
        self,
        spec: ScenarioSpec,
        store: Store,
        sandbox: Sandbox,
        adapter: Adapter,
        watcher: MarkerWatcher,
        settings: EngineSettings,
        emit: EventSink,
        gate: Gate | None = None,
        suites: anyio.CapacityLimiter | None = None,
        llm: ModelAccess | None = None,
        workers: WorkerPool | None = None,
    ) -> None:
        self.spec, self.store, self.sandbox, self.adapter = spec, store, sandbox, adapter
        self.llm = llm  # a real harness's way to its model, through the gateway
        self.watcher, self.settings, self.emit, self.gate = watcher, settings, emit, gate
        self.suites = suites  # bounds concurrent server starts + suites across all scenarios
        self.workers = workers  # the daemon's worker processes for suites (None: a thread of this process)
        self._cursor: TurnCursor | None = None  # the current turn's texts, state and history (`_turns`)
        self._turns_lock = anyio.Lock()
        self._ready_at: float | None = None  # when the sandbox was last (re)prepared; None: prepare first
        self._suites = AttemptSuites(workers)  # the latest (turn, attempt)'s suite, kept where it runs
        self.outage_waited = 0.0  # seconds this scenario has waited for its engine to answer again, in total
        self.outage_over = ""  # why it stopped waiting (the outage budget spent): the scenario then ends
        self._background: anyio.abc.TaskGroup | None = None  # the run's tasks that outlive an attempt (`run`)

    # --- texts and suites per turn ------------------------------------------------------------

    @property
    def _turns(self) -> TurnCursor:
        """The scenario's turn cursor, made on first use (at turn 0)."""
        if self._cursor is None:
            self._cursor = TurnCursor(self.spec.scenario, self.spec.language)
        return self._cursor

    async def _turn(self, number: int) -> Turn:
        """Turn `number`'s prompt, state and history; moving the cursor runs off the event loop."""
        async with self._turns_lock:
            if self._turns.current.number == number:
                return self._turns.current
            return await anyio.to_thread.run_sync(self._turns.at, number)

    async def _upcoming(self, number: int) -> Turn:
        """Turn `number`: the one after the current one is made without moving the cursor (`TurnCursor.peek`),
        so a retry of the current turn still finds it; any other is `_turn(number)`."""
        async with self._turns_lock:
            if self._turns.current.number == number:
                return self._turns.current
            if number == self._turns.current.number + 1:
                return await anyio.to_thread.run_sync(self._turns.peek, number)
        return await self._turn(number)

    def _make_ahead(self, turn: int, attempt: int) -> None:
        """Start making (turn, attempt)'s suite in the background, for its attempt's test step to find made."""
        if self._background is not None and 0 <= turn <= self._turns.turns:
            self._background.start_soon(self._ahead, turn, attempt)

    async def _ahead(self, turn: int, attempt: int) -> None:
        at = await self._upcoming(turn)
        await self._suites.ahead(turn, attempt, at.state, self.spec.scenario.seed, at.history)

    async def _suite_for(self, turn: int, attempt: int) -> int:
        """The attempt's suite, generated once per (turn, attempt) in a worker (`engine.suites`); it is pure, so
        an infra retry, or a resume after a restart, gets the same. Each attempt has data of its own (a server
        cannot pass a retry by replaying the answers of the attempt before); a later attempt costs twice
        the first.

        Generation grows with the design (~7 ms at turn 0, ~270 ms at turn 100 of seed 0), so it never
        runs on the event loop, which every other scenario shares; `_execute` starts it while the
        harness works, so that it is off the turn's critical path too.
        """
        at = await self._turn(turn)
        return await self._suites.get(turn, attempt, at.state, self.spec.scenario.seed, at.history)

    def _names(self, scenario_id: int) -> _Names:
        """The fields every runner event starts with: the scenario's id, configuration and seed."""
        return {"scenario": scenario_id, "configuration": self.spec.config_name, "seed": self.spec.scenario.seed}

    def _since(self, row: AttemptRow) -> float:
        """Losses after this time are this attempt's (not the container's before it was recreated)."""
        return max(row.launched_at, self._ready_at or 0.0)

    async def _loss(self, row: AttemptRow) -> Loss | None:
        """Whether the sandbox is gone (or frozen) now; an engine that cannot say is itself a loss, unless it
        does not answer at all: that outage is waited out (`ride_out`) and the sandbox asked again."""
        while True:
            try:
                loss = await self.sandbox.health(self._since(row))
            except SandboxError as exc:
                loss = Loss(kind=exc.kind, detail=str(exc))
            if loss is None or loss.paused or loss.kind not in OUTAGE_KINDS or not await self.ride_out():
                return loss

    async def ride_out(self) -> bool:
        """Whether a platform fault just met was the sandbox's engine not answering, now waited out: True once
        it answers again (the step is taken up again, no infra retry spent); False when it answers now (the
        fault is judged as it is) or the scenario's outage budget ran out (`outage_over` says so)."""
        watch = self.sandbox.watch()
        if watch is None or self.outage_over or await watch.answers():
            return False
        t0 = time.monotonic()
        try:
            await watch.ride_out(self.settings.outage_budget - self.outage_waited)
        except OutageOver as exc:
            self.outage_over = str(exc)
            return False
        finally:
            self.outage_waited += time.monotonic() - t0
        return True

    def _env(self) -> dict[str, str]:
        """The harness's environment; for a real harness, also its model and gateway route."""
        if self.llm is None:
            return dict(self.adapter.env)
        return {**self.adapter.env, **self.llm.env(self.sandbox.llm_host)}
