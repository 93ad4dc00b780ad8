"""Algorithm 1 for one scenario, as a resumable state machine over the attempts recorded in the store.

Position (turn, attempt, infra try) is always derived from the store, never kept only in memory:
a daemon killed at any point resumes by replaying the rows. A row goes `launched` (prompt written,
harness started) -> `harness_done` (marker seen) -> `tested` (suite ran, outcome recorded); each
transition is committed before the next step starts, so nothing runs twice and nothing is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from staminad.agents.base import Adapter
from staminad.bench.scenario import Scenario
from staminad.bench.texts import change_prompt, initial_prompt, render_spec
from staminad.engine.loc import count_loc
from staminad.engine.markers import Marker, MarkerWatcher, read_marker
from staminad.engine.outcome import classify_harness
from staminad.gateway.proxy import Gateway, Route
from staminad.sandbox.base import NotReady, Sandbox, SandboxError, marker_path
from staminad.suite.feedback import FeedbackLevel, render_feedback
from staminad.suite.generate import generate_suite
from staminad.suite.history import History, turn_history
from staminad.suite.http11 import Http11Transport
from staminad.suite.runner import run_suite
from state.store import AttemptRow, Store

EventSink = Callable[[str, dict[str, Any]], None]


class Gate:
    """Holds scenarios before each new attempt while paused (a running attempt always completes)."""

    def __init__(self) -> None:
        self._open = anyio.Event()
        self._open.set()
        self.active = 0  # attempts that passed the gate and are not yet recorded as tested

    @property
    def paused(self) -> bool:
        return not self._open.is_set()

    def pause(self) -> None:
        if self._open.is_set():
            self._open = anyio.Event()

    def resume(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        await self._open.wait()


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


class Position(msgspec.Struct, frozen=True, kw_only=True):
    """Where a scenario stands, derived from its attempt rows."""

    turns_passed: int
    final: str | None = None  # done | failed | infra_failed
    reason: str = ""
    turn: int = 0
    attempt: int = 1
    infra_try: int = 0
    prompt_kind: str = "turn"
    prompt: str | None = None  # None: the turn's own prompt
    resume: AttemptRow | None = None


def position(rows: list[AttemptRow], n_turns: int, retries: int, infra_retries: int,
             turns_passed: int | None = None) -> Position:
    """Replay attempt rows into the next step (or the final verdict) of Algorithm 1.

    Given `turns_passed`, `rows` need only be the latest turn's attempts (the engine's narrow read).
    """
    passed = len({r.turn for r in rows if r.outcome == "pass"}) if turns_passed is None else turns_passed
    if not rows:
        return Position(turns_passed=0)
    last = rows[-1]
    if last.phase != "tested":
        return Position(turns_passed=passed, turn=last.turn, attempt=last.attempt, infra_try=last.infra_try,
                        prompt_kind=last.prompt_kind, prompt=last.prompt, resume=last)
    if last.outcome == "pass":
        if last.turn >= n_turns:
            return Position(turns_passed=passed, final="done", reason="passed every turn")
        return Position(turns_passed=passed, turn=last.turn + 1)
    if last.outcome == "infra":
        if last.infra_try >= infra_retries:
            return Position(turns_passed=passed, final="infra_failed",
                            reason=f"{last.infra_kind} on turn {last.turn}, {infra_retries} infra retries used")
        return Position(turns_passed=passed, turn=last.turn, attempt=last.attempt, infra_try=last.infra_try + 1,
                        prompt_kind=last.prompt_kind, prompt=last.prompt)
    if last.attempt > retries:
        return Position(turns_passed=passed, final="failed",
                        reason=f"turn {last.turn} failed after {last.attempt} attempts: {last.categories}")
    return Position(turns_passed=passed, turn=last.turn, attempt=last.attempt + 1, prompt_kind="feedback",
                    prompt=last.feedback)


class ModelAccess:
    """A scenario's route through the gateway, and the model its harness is told to use."""

    def __init__(self, gateway: Gateway, route: Route, model: str) -> None:
        self.gateway, self.route, self.model = gateway, route, model

    def env(self, host: str) -> dict[str, str]:
        return {"STAMINA_LLM_BASE_URL": self.gateway.base_url(self.route, host), "STAMINA_LLM_MODEL": self.model}


class ScenarioRunner:
    def __init__(self, spec: ScenarioSpec, store: Store, sandbox: Sandbox, adapter: Adapter,
                 watcher: MarkerWatcher, settings: EngineSettings, emit: EventSink, gate: Gate | None = None,
                 suites: anyio.CapacityLimiter | None = None, llm: ModelAccess | None = None) -> None:
        self.spec, self.store, self.sandbox, self.adapter = spec, store, sandbox, adapter
        self.llm = llm  # a real harness's way to its model, through the gateway
        self.watcher, self.settings, self.emit, self.gate = watcher, settings, emit, gate
        self.suites = suites  # bounds concurrent server starts + suites across all scenarios
        self._prompts: list[str] | None = None
        self._histories: list[History | None] = []
        self._states: list[Any] = []

    # --- texts and suites per turn ------------------------------------------------------------

    def _prepare_turns(self) -> None:
        if self._prompts is not None:
            return
        sc = self.spec.scenario
        self._prompts = [initial_prompt(self.spec.language)]
        state, history = sc.initial, None
        self._states, self._histories = [state], [None]
        for batch in sc.turns:
            text, after = change_prompt(batch, state)
            history = turn_history(history, state, batch, after)
            state = after
            self._prompts.append(text)
            self._states.append(state)
            self._histories.append(history)

    def _job_id(self, pos: Position) -> str:
        return f"t{pos.turn:04d}-a{pos.attempt:02d}-i{pos.infra_try:02d}"

    # --- the loop -----------------------------------------------------------------------------

    async def run(self, scenario_id: int, infra_grant: int = 0) -> Position:
        """Drive the scenario to its verdict; `infra_grant` extends the infra retry budget (operator retry)."""
        self._prepare_turns()
        assert self._prompts is not None
        await self.sandbox.prepare()
        ws = self.sandbox.host_workspace
        if not (ws / "README.md").exists():
            (ws / "README.md").write_text(self.spec.readme)
            (ws / "initial_specification.md").write_text(render_spec(self.spec.scenario.initial))
        await self.store.update_scenario(scenario_id, status="running")
        n_turns = len(self.spec.scenario.turns)
        while True:
            rows = await self.store.latest_turn_attempts(scenario_id)  # not every row: flat cost per step
            pos = position(rows, n_turns, self.spec.retries, self.settings.infra_retries + infra_grant,
                           turns_passed=await self.store.turns_passed(scenario_id))
            if pos.final is None and pos.resume is None and self.llm is not None and self.llm.route.capped:
                pos = msgspec.structs.replace(pos, final="capped", reason=self.llm.route.capped)
            if pos.final is not None:
                await self.store.update_scenario(scenario_id, status=pos.final, turns_passed=pos.turns_passed,
                                                 reason=pos.reason)
                self.emit("scenario_finished", {"scenario": scenario_id, "status": pos.final,
                                                "turns_passed": pos.turns_passed, "reason": pos.reason})
                return pos
            await self.store.update_scenario(scenario_id, turns_passed=pos.turns_passed)
            row = pos.resume
            if row is None and self.gate is not None:
                await self.gate.wait()
            if self.gate is not None:
                self.gate.active += 1
            try:
                if row is None:
                    prompt = pos.prompt if pos.prompt is not None else self._prompts[pos.turn]
                    row = await self.store.begin_attempt(scenario_id, pos.turn, pos.attempt, pos.infra_try,
                                                         pos.prompt_kind, prompt)
                await self._execute(scenario_id, row, pos)
            finally:
                if self.gate is not None:
                    self.gate.active -= 1

    async def _execute(self, scenario_id: int, row: AttemptRow, pos: Position) -> None:
        job = self._job_id(pos)
        self.emit("attempt_started", {"scenario": scenario_id, "turn": row.turn, "attempt": row.attempt,
                                      "infra_try": row.infra_try, "resumed": pos.resume is not None})
        if row.phase == "launched":
            infra = await self._harness(scenario_id, row, job)
            if infra is not None:
                await self._infra(scenario_id, row, infra[0], infra[1])
                return
        await self._test(scenario_id, row)

    async def _harness(self, scenario_id: int, row: AttemptRow, job: str) -> tuple[str, str] | None:
        """Launch (or re-attach to) the harness and wait for its marker; returns (infra kind, detail)."""
        control = self.sandbox.host_control
        marker_file = marker_path(control, job)
        if self.llm is not None:  # calls from now on (fresh launch or resumed after a restart) are this attempt's
            route = self.llm.route
            route.attempt_id, route.turn, route.waited, route.unavailable = row.id, row.turn, 0.0, ""
        prompt_file = control / "prompts" / f"{job}.md"
        if not (control / "jobs" / job).exists() and read_marker(marker_file) is None:
            prompt_file.parent.mkdir(parents=True, exist_ok=True)
            prompt_file.write_text(row.prompt)
            argv = self.adapter.argv(self.sandbox.paths, f"{self.sandbox.paths.control}/prompts/{job}.md")
            if argv is None:
                (control / "jobs" / job).mkdir(parents=True, exist_ok=True)
                self.emit("manual_prompt", {"scenario": scenario_id, "prompt": str(prompt_file),
                                            "workspace": str(self.sandbox.host_workspace),
                                            "done": f"staminad done --marker {marker_file}"})
            else:
                await self.sandbox.launch(job, argv, self._env())
        elif read_marker(marker_file) is None and not self.adapter.manual and not await self.sandbox.job_alive(job):
            pid_file = control / "jobs" / job / "pid"
            with anyio.move_on_after(2):
                while not pid_file.exists() and read_marker(marker_file) is None:
                    await anyio.sleep(0.05)  # the wrapper writes its pid first thing; give a starting one a moment
            if not pid_file.exists() and read_marker(marker_file) is None:
                # Interrupted between writing the job and starting it: the harness never ran, start it now.
                argv = self.adapter.argv(self.sandbox.paths, f"{self.sandbox.paths.control}/prompts/{job}.md")
                assert argv is not None
                prompt_file.parent.mkdir(parents=True, exist_ok=True)
                prompt_file.write_text(row.prompt)
                await self.sandbox.launch(job, argv, self._env())
            elif read_marker(marker_file) is None:
                return "sandbox_lost", "the harness is gone and left no marker (sandbox lost while the daemon was away)"
        marker = await self._wait_marker(marker_file, row)
        if marker is None:
            await self.sandbox.kill_job(job)  # stuck: the harness and anything in its process group
            await self.store.update_attempt(row.id, phase="harness_done", harness_seconds=self.settings.turn_timeout)
            return "stuck", f"no marker within the turn timeout of {self.settings.turn_timeout:.0f} s"
        exit_code, sig = marker.get("exit"), marker.get("signal")
        started, ended = marker.get("started"), marker.get("ended")
        harness_s = float(ended) - float(started) if started and ended else None
        latency = marker["seen_at"] - float(ended) if ended else None
        loc = await anyio.to_thread.run_sync(count_loc, self.sandbox.host_workspace)
        await self.store.update_attempt(row.id, phase="harness_done", harness_exit=exit_code, harness_signal=sig,
                                        harness_seconds=harness_s, marker_latency=latency, loc=loc)
        kind = classify_harness(exit_code, sig, killed_by_engine=False)
        if self.llm is not None and self.llm.route.unavailable:
            # The model, not the agent, failed this attempt: whatever the harness did after is not its fault.
            reason, self.llm.route.unavailable = self.llm.route.unavailable, ""
            return "llm_unavailable", reason
        if kind == "harness_crash" and self.llm is not None and self.llm.route.capped:
            kind = None  # the cost cap cut the harness off: score what it built; the scenario then ends capped
        self.emit("harness_done", {"scenario": scenario_id, "turn": row.turn, "attempt": row.attempt,
                                   "exit": exit_code, "signal": sig, "harness_seconds": harness_s})
        if kind is not None:
            return kind, f"harness exit {exit_code}, signal {sig}"
        return None

    def _env(self) -> dict[str, str]:
        """The harness's environment; for a real harness, also its model and gateway route."""
        if self.llm is None:
            return dict(self.adapter.env)
        return {**self.adapter.env, **self.llm.env(self.sandbox.llm_host)}

    async def _wait_marker(self, marker_file: Path, row: AttemptRow) -> Marker | None:
        """The marker, or None after the turn timeout; time spent waiting out model outages is given back."""
        granted = 0.0
        while True:
            waited = self.llm.route.waited if self.llm is not None else 0.0
            remaining = self.settings.turn_timeout + waited - (time.time() - row.launched_at)
            marker = await self.watcher.wait(marker_file, max(remaining, 0.0))
            if marker is not None or self.llm is None or self.llm.route.waited <= granted:
                return marker
            granted = self.llm.route.waited  # the gateway waited on the model meanwhile: extend and wait again

    async def _infra(self, scenario_id: int, row: AttemptRow, kind: str, detail: str) -> None:
        await self.store.infra_event(scenario_id, row.turn, row.attempt, kind, detail)
        await self.store.update_attempt(row.id, phase="tested", outcome="infra", infra_kind=kind,
                                        finished_at=time.time())
        self.emit("infra_failure", {"scenario": scenario_id, "turn": row.turn, "attempt": row.attempt,
                                    "infra_try": row.infra_try, "kind": kind, "detail": detail})

    async def _test(self, scenario_id: int, row: AttemptRow) -> None:
        if self.suites is None:
            await self._test_now(scenario_id, row)
        else:
            async with self.suites:
                await self._test_now(scenario_id, row)

    async def _test_now(self, scenario_id: int, row: AttemptRow) -> None:
        t0 = time.monotonic()
        try:
            handle = await self.sandbox.start_server(self.settings.server_start_timeout)
        except NotReady as exc:
            await self._infra(scenario_id, row, "server_never_ready", str(exc))
            return
        except SandboxError as exc:
            await self._infra(scenario_id, row, "sandbox_lost", str(exc))
            return
        t1 = time.monotonic()
        self.emit("suite_started", {"scenario": scenario_id, "turn": row.turn, "attempt": row.attempt,
                                    "server_seconds": t1 - t0})
        try:
            suite = generate_suite(self._states[row.turn], self.spec.scenario.seed, row.turn,
                                   self._histories[row.turn])
            async with Http11Transport.for_url(handle.url, self.settings.request_timeout) as transport:
                result = await run_suite(suite, transport)
        finally:
            t2 = time.monotonic()
            with anyio.CancelScope(shield=True):
                await self.sandbox.stop_server(handle)
        t3 = time.monotonic()
        failures = result.failures
        categories = ",".join(sorted({f.category for f in failures}))
        feedback = render_feedback(result, self.spec.feedback) if failures else None
        await self.store.update_attempt(
            row.id, results=result.results, phase="tested", outcome="fail" if failures else "pass",
            categories=categories, passed_tests=len(result.results) - len(failures), total_tests=len(result.results),
            feedback=feedback, server_seconds=t1 - t0, suite_seconds=t2 - t1, teardown_seconds=t3 - t2,
            finished_at=time.time())
        self.emit("attempt_tested", {"scenario": scenario_id, "turn": row.turn, "attempt": row.attempt,
                                     "passed": not failures, "failed_tests": len(failures),
                                     "tests": len(result.results), "categories": categories,
                                     "suite_seconds": t2 - t1, "server_seconds": t1 - t0})
