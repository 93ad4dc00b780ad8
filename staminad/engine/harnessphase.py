"""The harness phase of an attempt: launch (or re-attach to) the harness, wait for its marker, judge it.

While the harness runs, the sandbox's health is polled, so a lost container is known in seconds; the
marker's exit status (and the model's gateway route) says whether the attempt goes on to be tested or
is an infra failure (`engine.outcome`). Manual mode hands the prompt to a person instead.
"""

from __future__ import annotations

import contextlib
import time

import anyio

from protocol.events import HarnessDone, ManualPrompt, watchdog_deadline
from protocol.kinds import InfraKind
from protocol.usage import hint
from staminad.engine.markers import Marker
from staminad.engine.outcome import classify_harness
from staminad.engine.runbase import RunnerBase
from staminad.sandbox.base import SandboxError, marker_path
from state.store import AttemptRow, HarnessEnd

LIVENESS_INTERVAL = 2.0  # seconds between sandbox health checks while a harness runs
JOB_CHECK_EVERY = 3  # health checks per check that the harness's wrapper still runs


class HarnessPhase(RunnerBase):
    """An attempt from its launch to its harness's marker (or to why there is none)."""

    async def _harness(  # noqa: C901 - the harness phase's states (fresh, re-attached, lost, timed out) in the order they happen
        self, scenario_id: int, row: AttemptRow, job: str, launched: anyio.Event | None = None
    ) -> tuple[InfraKind, str] | None:
        """Launch (or re-attach to) the harness and wait for its marker; returns (infra kind, detail). `launched`
        is set once the harness runs (or is found running), when the marker's wait begins."""
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
        if launched is not None:
            launched.set()
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

    async def _wait_marker(self, row: AttemptRow, job: str) -> tuple[Marker | None, tuple[InfraKind, str] | None]:
        """(the marker, None), or (None, why the harness is lost) as soon as that is known, or (None, None)
        after the turn timeout; time spent waiting out model outages is given back, and an attempt taken up
        again after a restart is watched from then. A marker present at the deadline is read, not judged.

        Every LIVENESS_INTERVAL the sandbox's health is polled (a lost container is known in seconds, not
        after the whole turn timeout), and less often whether the harness's wrapper still runs. A paused
        container is waited for until the turn timeout; then it is the platform's loss: an agent has no
        way to pause its own container (no engine socket inside), and the time frozen is not the agent's.
        """
        granted, polls, outage_from = 0.0, 0, self.outage_waited
        while True:
            # Time spent waiting for a model or for the engine to answer again is not the agent's.
            waited = (self.llm.waited if self.llm is not None else 0.0) + self.outage_waited - outage_from
            # From the launch, or from when the sandbox was ready if it was made for this attempt (a first turn, a
            # retry after a loss): creating, restoring and sealing it is the platform's time, not the agent's.
            deadline = watchdog_deadline(self._since(row), self.settings.turn_timeout, waited, row.resumed_at)
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
