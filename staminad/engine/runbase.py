"""What every phase of a scenario's run works with.

`RunnerBase` holds a run's spec (`engine.spec`) and runtime parts, the texts and states of every turn,
the attempt suites, and the few questions each phase asks: is the sandbox lost, what do its events
start with, what environment does the harness get. The phases (`engine.harnessphase`,
`engine.suitephase`) and the loop that drives them (`engine.scenario`) build on it.
"""

from __future__ import annotations

from typing import Any, TypedDict

import anyio

from staminad.agents.base import Adapter
from staminad.bench.texts import change_prompt, initial_prompt
from staminad.engine.access import ModelAccess
from staminad.engine.gate import Gate
from staminad.engine.markers import MarkerWatcher
from staminad.engine.spec import EngineSettings, EventSink, ScenarioSpec
from staminad.engine.suites import AttemptSuites
from staminad.sandbox.base import Loss, Sandbox, SandboxError
from staminad.suite.history import History, turn_history
from staminad.suite.pool import WorkerPool
from state.store import AttemptRow, Store


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
        self._prompts: list[str] | None = None
        self._histories: list[History | None] = []
        self._states: list[Any] = []
        self._ready_at: float | None = None  # when the sandbox was last (re)prepared; None: prepare first
        self._suites = AttemptSuites(workers)  # the latest (turn, attempt)'s suite, kept where it runs

    # --- texts and suites per turn ------------------------------------------------------------

    def _prepare_turns(self) -> None:
        if self._prompts is not None:
            return
        sc = self.spec.scenario
        prompts = [initial_prompt(self.spec.language)]
        state, history = sc.initial, None
        states: list[Any] = [state]
        histories: list[History | None] = [None]
        for batch in sc.turns:
            text, after = change_prompt(batch, state)
            history = turn_history(history, state, batch, after)
            state = after
            prompts.append(text)
            states.append(state)
            histories.append(history)
        self._states, self._histories, self._prompts = states, histories, prompts  # all at once, or not at all

    async def _suite_for(self, turn: int, attempt: int) -> int:
        """The attempt's suite, generated once per (turn, attempt) in a worker (`engine.suites`); it is pure, so
        an infra retry, or a resume after a restart, gets the same. Each attempt has data of its own (a server
        cannot pass a retry by replaying the answers of the attempt before); a later attempt costs twice
        the first.

        Generation grows with the design (~7 ms at turn 0, ~270 ms at turn 100 of seed 0), so it never
        runs on the event loop, which every other scenario shares; `_execute` starts it while the
        harness works, so that it is off the turn's critical path too.
        """
        return await self._suites.get(turn, attempt, self._states[turn], self.spec.scenario.seed, self._histories[turn])

    def _names(self, scenario_id: int) -> _Names:
        """The fields every runner event starts with: the scenario's id, configuration and seed."""
        return {"scenario": scenario_id, "configuration": self.spec.config_name, "seed": self.spec.scenario.seed}

    def _since(self, row: AttemptRow) -> float:
        """Losses after this time are this attempt's (not the container's before it was recreated)."""
        return max(row.launched_at, self._ready_at or 0.0)

    async def _loss(self, row: AttemptRow) -> Loss | None:
        """Whether the sandbox is gone (or frozen) now; an engine that cannot say is itself a loss."""
        try:
            return await self.sandbox.health(self._since(row))
        except SandboxError as exc:
            return Loss(kind=exc.kind, detail=str(exc))

    def _env(self) -> dict[str, str]:
        """The harness's environment; for a real harness, also its model and gateway route."""
        if self.llm is None:
            return dict(self.adapter.env)
        return {**self.adapter.env, **self.llm.env(self.sandbox.llm_host)}
