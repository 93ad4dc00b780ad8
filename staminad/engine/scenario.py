"""Algorithm 1 for one scenario, as a resumable state machine over the attempts recorded in the store.

Position (turn, attempt, infra try) is always derived from the store, never kept only in memory:
a daemon killed at any point resumes by replaying the rows. A row goes `launched` (prompt written,
harness started) -> `harness_done` (marker seen) -> `tested` (suite ran, outcome recorded); each
transition is committed before the next step starts, so nothing runs twice and nothing is lost.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypedDict

import anyio
import msgspec

from protocol.events import (
    AttemptStarted,
    AttemptTested,
    EventData,
    HarnessDone,
    InfraFailure,
    ManualPrompt,
    ScenarioFinished,
    SuiteStarted,
    watchdog_deadline,
)
from protocol.kinds import InfraKind
from protocol.usage import hint
from staminad.agents.base import Adapter
from staminad.bench.scenario import Scenario
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.engine.blame import server_feedback
from staminad.engine.markers import Marker, MarkerWatcher
from staminad.engine.outcome import classify_harness
from staminad.engine.position import Position, position
from staminad.engine.suites import AttemptSuites
from staminad.gateway.proxy import Gateway, Route
from staminad.sandbox.base import Loss, NotReady, Sandbox, SandboxError, marker_path
from staminad.sandbox.codekeep import job_id
from staminad.suite.feedback import FeedbackLevel
from staminad.suite.history import History, turn_history
from staminad.suite.pool import WorkerPool
from state.store import AttemptRow, HarnessEnd, Store, Verdict

log = logging.getLogger(__name__)

EventSink = Callable[[EventData], None]


class _Names(TypedDict):
    scenario: int
    configuration: str
    seed: int


LIVENESS_INTERVAL = 2.0  # seconds between sandbox health checks while a harness runs
JOB_CHECK_EVERY = 3  # health checks per check that the harness's wrapper still runs
CLEANUP_TIMEOUT = 90.0  # bound on removing what is left of a lost sandbox
RECREATE_AFTER = ("sandbox_lost", "sandbox_exited", "engine_error")
SERVER_LOG_TAIL = 4000  # bytes of a server start's log kept with its attempt


class Gate:
    """Holds scenarios before each new attempt while paused (a running attempt always completes)."""

    def __init__(self) -> None:
        self._open = anyio.Event()
        self._open.set()
        self.active = 0  # attempts that passed the gate and are not yet recorded as tested
        self.held = 0  # scenarios waiting at the closed gate: they hold a slot but run nothing
        self._idle = anyio.Event()  # set while no attempt is active
        self._idle.set()

    def enter(self) -> None:
        """An attempt passed the gate."""
        self.active += 1
        if self._idle.is_set():
            self._idle = anyio.Event()

    def leave(self) -> None:
        """An attempt is recorded (or given up): the gate is idle again once the last one leaves."""
        self.active -= 1
        if self.active == 0:
            self._idle.set()

    async def idle(self) -> None:
        """Return once no attempt is active (at once if none is)."""
        await self._idle.wait()

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    def pause(self) -> None:
        if self._open.is_set():
            self._open = anyio.Event()

    def resume(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        held = not self._open.is_set()
        self.held += held
        try:
            await self._open.wait()
        finally:
            self.held -= held


class EngineSettings(msgspec.Struct, frozen=True, kw_only=True):
    turn_timeout: float = 600.0
    server_start_timeout: float = 60.0
    request_timeout: float = 5.0
    infra_retries: int = 10


class ScenarioSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What one scenario run needs besides the runtime parts."""

    config_id: int
    config_name: str
    retries: int
    feedback: FeedbackLevel
    scenario: Scenario
    language: str
    readme: str


class ModelAccess:
    """A scenario's route through the gateway, and the model its harness is told to use.

    The engine reads the route through this and changes it only through the gateway's methods, so
    the gateway alone writes what it records (cost, waits, model loss, the cap).
    """

    def __init__(
        self, gateway: Gateway, route: Route, model: str, window: int | None = None, compact_at: float | None = None
    ) -> None:
        self.gateway, self._route, self.model = gateway, route, model
        self.window, self.compact_at = window, compact_at

    def env(self, host: str) -> dict[str, str]:
        env = {"STAMINA_LLM_BASE_URL": self.gateway.base_url(self._route, host), "STAMINA_LLM_MODEL": self.model}
        if self.window:  # the launcher hands it to the harness's own settings (`staminad.agents.windows`)
            env["STAMINA_LLM_CONTEXT_WINDOW"] = str(self.window)
            if self.compact_at is not None:
                env["STAMINA_LLM_COMPACT_AT"] = str(self.compact_at)
        return env

    def begin_attempt(self, attempt_id: int, turn: int) -> None:
        self.gateway.begin_attempt(self._route, attempt_id, turn)

    def take_unavailable(self) -> str:
        return self.gateway.take_unavailable(self._route)

    @property
    def capped(self) -> str:
        """Why the cost cap ended this scenario's model access ("" while it has not)."""
        return self._route.capped

    @property
    def waited(self) -> float:
        """Seconds of upstream trouble the gateway waited out (or queued for the model) during the current attempt."""
        return self._route.waited

    @property
    def exhausted(self) -> str:
        """The model's words when a call of the current attempt was over its context window ("" if none was)."""
        return self._route.exhausted


class ScenarioRunner:
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

    def _job_id(self, pos: Position) -> str:
        return job_id(pos.turn, pos.attempt, pos.infra_try)

    # --- the loop -----------------------------------------------------------------------------

    async def run(self, scenario_id: int, infra_grant: int = 0) -> Position:
        """Drive the scenario to its verdict; `infra_grant` extends the infra retry budget (operator retry)."""
        try:
            return await self._drive(scenario_id, infra_grant)
        finally:
            await self._suites.close()  # the worker keeping its last suite forgets it

    async def _drive(self, scenario_id: int, infra_grant: int) -> Position:
        if self._prompts is None:  # seconds for 1,000 turns: off the loop every scenario shares
            await anyio.to_thread.run_sync(self._prepare_turns)
        assert self._prompts is not None
        n_turns = len(self.spec.scenario.turns)
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
                    prompt = pos.prompt if pos.prompt is not None else self._prompts[pos.turn]
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
            {"README.md": self.spec.readme, "initial_specification.md": render_spec(self.spec.scenario.initial)}
        )
        self._ready_at = time.time()

    def _names(self, scenario_id: int) -> _Names:
        """The fields every runner event starts with: the scenario's id, configuration and seed."""
        return {"scenario": scenario_id, "configuration": self.spec.config_name, "seed": self.spec.scenario.seed}

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
        """`_harness`, with the turn's suite generated meanwhile (so it is ready when the marker comes)."""
        lost: SandboxError | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._prefetch, row.turn, row.attempt)
            try:
                infra = await self._harness(scenario_id, row, job)
            except SandboxError as exc:  # raised below, not as a group of one
                lost, infra = exc, None
        if lost is not None:
            raise lost
        return infra

    async def _prefetch(self, turn: int, attempt: int) -> None:
        """`_suite_for` ahead of the marker; a lost worker is left for the test step to meet (and record)."""
        with contextlib.suppress(SandboxError):
            await self._suite_for(turn, attempt)

    def _since(self, row: AttemptRow) -> float:
        """Losses after this time are this attempt's (not the container's before it was recreated)."""
        return max(row.launched_at, self._ready_at or 0.0)

    async def _loss(self, row: AttemptRow) -> Loss | None:
        """Whether the sandbox is gone (or frozen) now; an engine that cannot say is itself a loss."""
        try:
            return await self.sandbox.health(self._since(row))
        except SandboxError as exc:
            return Loss(kind=exc.kind, detail=str(exc))

    async def _harness(self, scenario_id: int, row: AttemptRow, job: str) -> tuple[InfraKind, str] | None:  # noqa: C901 - the harness phase's states (fresh, re-attached, lost, timed out) in the order they happen
        """Launch (or re-attach to) the harness and wait for its marker; returns (infra kind, detail)."""
        if self.llm is not None:  # calls from now on (fresh launch or resumed after a restart) are this attempt's
            self.llm.begin_attempt(row.id, row.turn)
        state = await self.sandbox.job_state(job)
        if not state.written and state.marker is None:
            prompt = await self.sandbox.put_prompt(job, row.prompt)
            argv = self.adapter.argv(self.sandbox.paths, prompt)
            if argv is None:
                self._hand_to_person(scenario_id, job)
            else:
                await self.sandbox.launch(job, argv, self._env())
        elif state.marker is None and self.adapter.manual:
            self._hand_to_person(scenario_id, job)  # resumed: tell the person again (whoever ran this may be new)
        elif state.marker is None and not await self.sandbox.job_alive(job):
            with anyio.move_on_after(2):
                while not state.started and state.marker is None:
                    await anyio.sleep(0.05)  # the wrapper writes its pid first thing; give a starting one a moment
                    state = await self.sandbox.job_state(job)
            if not state.started and state.marker is None:
                # Interrupted between writing the job and starting it: the harness never ran, start it now.
                argv = self.adapter.argv(self.sandbox.paths, await self.sandbox.put_prompt(job, row.prompt))
                assert argv is not None
                await self.sandbox.launch(job, argv, self._env())
            elif state.marker is None:
                return "sandbox_lost", "the harness is gone and left no marker (sandbox lost while the daemon was away)"
        marker, lost = await self._wait_marker(row, job)
        if marker is None:
            await self.store.harness_done(row.id, HarnessEnd(harness_seconds=time.time() - row.launched_at))
            if lost is not None:
                return lost
            await self.sandbox.kill_job(job)  # stuck: the harness and anything in its process group
            return "stuck", f"no marker within the turn timeout of {self.settings.turn_timeout:.0f} s"
        exit_code, sig = marker.get("exit"), marker.get("signal")
        started, ended = marker.get("started"), marker.get("ended")
        harness_s = float(ended) - float(started) if started and ended else None
        if self.adapter.manual and ended:  # `done` knows only its own time: a person's attempt runs from delivery
            harness_s = max(0.0, float(ended) - row.launched_at)
        latency = marker["seen_at"] - float(ended) if ended else None
        try:
            loc: int | None = await self.sandbox.count_loc()
        except SandboxError as exc:
            if exc.kind != "engine_error":
                raise
            loc = None  # a count that fails or runs out of time (the agent's millions of files) is not the attempt's
        await self.store.harness_done(
            row.id,
            HarnessEnd(
                harness_exit=exit_code, harness_signal=sig, harness_seconds=harness_s, marker_latency=latency, loc=loc
            ),
        )
        kind = classify_harness(exit_code, sig, killed_by_engine=False)
        if self.llm is not None and (reason := self.llm.take_unavailable()):
            # The model, not the agent, failed this attempt: whatever the harness did after is not its fault.
            return "llm_unavailable", reason
        if kind is not None and self.llm is not None and self.llm.exhausted:
            return "context_exhausted", f"harness exit {exit_code}, signal {sig} after: {self.llm.exhausted[:300]}"
        if kind == "harness_crash" and self.llm is not None and self.llm.capped:
            kind = None  # the cost cap cut the harness off: score what it built; the scenario then ends capped
        self.emit(
            HarnessDone(
                **self._names(scenario_id),
                turn=row.turn,
                attempt=row.attempt,
                exit=exit_code,
                signal=sig,
                harness_seconds=harness_s,
            )
        )
        if kind is not None:
            why = f" ({marker['error']})" if marker.get("error") else ""  # an unreadable or unusable marker
            return kind, f"harness exit {exit_code}, signal {sig}{why}"
        return None

    def _hand_to_person(self, scenario_id: int, job: str) -> None:
        """Manual mode: the job's directory marks the prompt as handed over; a person runs it and marks it done."""
        view = self.sandbox.host_files
        if view is None:
            raise SandboxError(
                "manual mode needs a sandbox on the daemon's own disk (not workspace = volume)", "engine_error"
            )
        (view.control / "jobs" / job).mkdir(parents=True, exist_ok=True)
        self.emit(
            ManualPrompt(
                **self._names(scenario_id),
                prompt=str(view.control / "prompts" / f"{job}.md"),
                workspace=str(view.workspace),
                done=f"{hint('done')} --marker {marker_path(view.control, job)}",
            )
        )

    def _env(self) -> dict[str, str]:
        """The harness's environment; for a real harness, also its model and gateway route."""
        if self.llm is None:
            return dict(self.adapter.env)
        return {**self.adapter.env, **self.llm.env(self.sandbox.llm_host)}

    async def _wait_marker(self, row: AttemptRow, job: str) -> tuple[Marker | None, tuple[InfraKind, str] | None]:
        """(the marker, None), or (None, why the harness is lost) as soon as that is known, or (None, None)
        after the turn timeout; time spent waiting out model outages is given back, and an attempt taken up
        again after a restart is watched from then. A marker present at the deadline is read, not judged.

        Every LIVENESS_INTERVAL the sandbox's health is polled (a lost container is known in seconds, not
        after the whole turn timeout), and less often whether the harness's wrapper still runs. A paused
        container is waited for until the turn timeout; then it is the platform's loss: an agent has no
        way to pause its own container (no engine socket inside), and the time frozen is not the agent's.
        """
        granted, polls = 0.0, 0
        while True:
            waited = self.llm.waited if self.llm is not None else 0.0
            deadline = watchdog_deadline(row.launched_at, self.settings.turn_timeout, waited, row.resumed_at)
            remaining = deadline - time.time()
            if remaining <= 0:  # a harness that finished is finished, whenever it did: look once more, then judge
                marker = None
                with contextlib.suppress(SandboxError):  # a sandbox that cannot answer is judged below, as before
                    marker = await self.sandbox.wait_marker(job, 0.0, self.watcher)
                if marker is not None:
                    return marker, None
            if remaining > 0:
                marker = await self.sandbox.wait_marker(job, min(remaining, LIVENESS_INTERVAL), self.watcher)
                if marker is not None:
                    return marker, None
                if remaining > LIVENESS_INTERVAL:
                    polls += 1
                    loss = await self._loss(row)
                    if loss is not None and not loss.paused:
                        return (await self.sandbox.job_state(job)).marker, (loss.kind, loss.detail)
                    if loss is None and not self.adapter.manual and polls % JOB_CHECK_EVERY == 0:
                        vanished = await self._vanished(job)
                        if vanished is not None:
                            return vanished
                    continue
                remaining = 0.0
            if self.llm is not None and self.llm.waited > granted:
                granted = self.llm.waited  # the gateway waited on the model meanwhile: extend and wait again
                continue
            loss = await self._loss(row)
            if loss is not None:
                return None, (loss.kind, f"{loss.detail} beyond the turn timeout of {self.settings.turn_timeout:.0f} s")
            return None, None

    async def _vanished(self, job: str) -> tuple[Marker | None, tuple[InfraKind, str] | None] | None:
        """The harness's wrapper is gone without a marker (something inside killed it): say so, or None."""
        if not (await self.sandbox.job_state(job)).started or await self.sandbox.job_alive(job):
            return None
        marker = (await self.sandbox.job_state(job)).marker  # the wrapper writes it just before it ends its group
        if marker is not None and "exit" in marker:
            return marker, None
        return None, (
            "harness_killed",
            "the harness and its wrapper were killed from inside the sandbox before writing a completion marker",
        )

    async def _infra(self, scenario_id: int, row: AttemptRow, kind: InfraKind, detail: str) -> None:
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
        tests = await self._suite_for(row.turn, row.attempt)  # its number of tests
        t0 = time.monotonic()
        try:
            handle = await self.sandbox.start_server(self.settings.server_start_timeout, self.settings.request_timeout)
        except NotReady as exc:
            loss = await self._loss(row)
            if loss is not None:  # the server did not start because the sandbox went: the platform's fault
                raise SandboxError(f"{loss.detail} while the server started", loss.kind) from None
            await self._server_failed(scenario_id, row, exc, tests, time.monotonic() - t0)
            return
        t1, suite_began = time.monotonic(), time.time()
        self.emit(SuiteStarted(**self._names(scenario_id), turn=row.turn, attempt=row.attempt, server_seconds=t1 - t0))
        try:
            timeout, level = self.settings.request_timeout, self.spec.feedback
            result = await self._suites.run(row.turn, row.attempt, handle.url, timeout, level)
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
        server_log = await self._server_log()
        await self.store.tested(
            row.id,
            Verdict(
                compressed=result.results,
                outcome="fail" if result.failed else "pass",
                categories=result.categories,
                passed_tests=result.tests - result.failed,
                total_tests=result.tests,
                feedback=result.feedback,
                server_seconds=t1 - t0,
                suite_seconds=t2 - t1,
                teardown_seconds=t3 - t2,
                server_log=server_log,
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
                suite_seconds=t2 - t1,
                server_seconds=t1 - t0,
            )
        )

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
                categories=exc.kind,
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
                categories=exc.kind,
                suite_seconds=0.0,
                server_seconds=seconds,
                detail=str(exc),
            )
        )
