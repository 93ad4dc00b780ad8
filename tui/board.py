"""The monitor's model, free of Textual: what the daemon said, kept current by its events.

Snapshots from requests (`SweepList`, `ScenarioList`) replace what the board holds; events then move
single scenarios along (phase, turn, attempt, history) so a screen can redraw one row, not a table.
A scenario snapshot says which event it already reflects (`ScenarioList.seq`): older events are only
logged, and folding is idempotent (a turn's pass sets history[turn]) for those that raced the snapshot.
The event log is a bounded ring of `LogLine`s with infrastructure failures marked, filterable by text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import assert_never

import msgspec

from protocol import Event, ScenarioList, ScenarioRow, SweepInfo, SweepList
from protocol.events import (
    AttemptStarted,
    AttemptTested,
    EventData,
    HarnessDone,
    InfraFailure,
    LlmCall,
    LlmCapped,
    LlmUnavailable,
    LlmWait,
    ManualPrompt,
    ScenarioFinished,
    SuiteStarted,
    SweepFailed,
    SweepStarted,
    event_cost,
    phase,
    scenario_of,
    step_after,
    watchdog_deadline,
)
from protocol.kinds import INFRA_KINDS, InfraKind
from protocol.messages import HISTORY_END

LOG_LINES = 5000


def infra_text(kind: InfraKind) -> str:
    """Why an attempt was an infrastructure failure, in words an operator acts on (every kind has its words:
    mypy refuses a kind left out)."""
    match kind:
        case "self_kill":
            return "the agent killed its own harness (a broad pkill)"
        case "stuck":
            return "no marker within the turn timeout (hang)"
        case "harness_crash":
            return "the harness crashed"
        case "context_exhausted":
            return "the model's context window ran out (the harness failed after a context-length refusal)"
        case "harness_killed":
            return "the harness was killed by a signal"
        case "sandbox_exited":
            return "the container was ended from inside"
        case "sandbox_lost":
            return "the sandbox was lost (removed, killed or paused)"
        case "engine_error":
            return "the container engine failed"
        case "port_taken":
            return "a program outside the sandbox holds the server port"
        case "llm_unavailable":
            return "the LLM endpoint was unavailable"
        case "internal_error":
            return "a bug in the benchmark itself (its traceback is in the daemon log)"
        case _:
            assert_never(kind)


INFRA_TEXT: dict[str, str] = {kind: infra_text(kind) for kind in INFRA_KINDS}  # by the word, as rows carry it


Scenario = ScenarioRow  # the board keeps the daemon's rows and moves them along itself


def label(s: Scenario) -> str:
    return f"{s.configuration} / seed {s.seed}"


@dataclass(frozen=True)
class LogLine:
    seq: int
    at: float
    sweep: str
    kind: str
    text: str
    severity: str  # info | ok | fail | infra | error

    @property
    def time(self) -> str:
        return datetime.fromtimestamp(self.at).strftime("%H:%M:%S")

    def matches(self, needle: str, infra_only: bool) -> bool:
        if infra_only and self.severity not in ("infra", "error"):
            return False
        if not needle:
            return True
        needle = needle.lower()
        return needle in self.text.lower() or needle in self.kind or needle in self.sweep.lower()


@dataclass
class Change:
    """What an event changed: a scenario row to redraw, a log line to add, a scenario list to load."""

    scenario: Scenario | None = None
    unknown_scenario: bool = False
    line: LogLine | None = None


@dataclass
class Board:
    sweeps: dict[str, SweepInfo] = field(default_factory=dict)
    scenarios: dict[str, dict[int, Scenario]] = field(default_factory=dict)
    retries: dict[str, dict[str, int]] = field(default_factory=dict)
    turn_timeout: dict[str, float] = field(default_factory=dict)  # per sweep, seconds (0: unknown)
    log: deque[LogLine] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    _seen: set[tuple[int, float]] = field(default_factory=set)
    # Per sweep, the daemon's last event already reflected in the scenario snapshot held.
    _snapshot_seq: dict[str, int] = field(default_factory=dict)

    # --- snapshots ----------------------------------------------------------------------------

    def set_sweeps(self, listed: SweepList) -> None:
        self.sweeps = {s.sweep: s for s in listed.sweeps}

    def set_sweep(self, info: SweepInfo) -> None:
        self.sweeps[info.sweep] = info

    def set_scenarios(self, listed: ScenarioList) -> None:
        self.scenarios[listed.sweep] = {r.id: r for r in listed.scenarios}
        self.retries[listed.sweep] = dict(listed.retries)
        self.turn_timeout[listed.sweep] = listed.turn_timeout
        self._snapshot_seq[listed.sweep] = listed.seq

    def reattached(self) -> None:
        """A (new) daemon process numbers its events afresh: older snapshots no longer say which they hold."""
        self._snapshot_seq.clear()

    def max_attempts(self, sweep: str, configuration: str) -> int | None:
        retries = self.retries.get(sweep, {}).get(configuration)
        return None if retries is None else retries + 1

    def find(self, sweep: str, scenario_id: int) -> Scenario | None:
        return self.scenarios.get(sweep, {}).get(scenario_id)

    # --- events -------------------------------------------------------------------------------

    def apply(self, event: Event) -> Change:
        """Fold one event into the board. A replayed event already seen is ignored."""
        key = (event.seq, event.at)
        if key in self._seen:
            return Change()
        self._seen.add(key)
        if len(self._seen) > 4 * LOG_LINES:
            self._seen = {(line.seq, line.at) for line in self.log}
        change = Change()
        sid = scenario_of(event.data)
        scenario = self.find(event.sweep, sid) if sid is not None else None
        if sid is not None and scenario is None:
            change.unknown_scenario = True
        if scenario is not None and event.seq > self._snapshot_seq.get(event.sweep, 0):
            before = scenario.phase
            _advance(scenario, event.data)
            if scenario.phase != before or event.kind == "attempt_started":
                scenario.since = event.at
            timeout = self.turn_timeout.get(event.sweep, 0.0)
            if event.kind == "attempt_started":  # the engine's watchdog counts from the launch
                scenario.deadline = watchdog_deadline(event.at, timeout) if timeout else 0.0
            elif isinstance(event.data, LlmWait) and scenario.deadline:
                scenario.deadline += event.data.wait_seconds  # the engine gives the attempt this outage's time
            elif event.kind in ("harness_done", "infra_failure", "scenario_finished", "attempt_tested"):
                scenario.deadline = 0.0
            change.scenario = scenario
        change.line = self._log(event, scenario)
        return change

    def _log(self, event: Event, scenario: Scenario | None) -> LogLine:
        text, severity = describe(event, scenario)
        line = LogLine(seq=event.seq, at=event.at, sweep=event.sweep, kind=event.kind, text=text, severity=severity)
        self.log.append(line)
        return line

    def lines(self, needle: str = "", infra_only: bool = False) -> Iterable[LogLine]:
        return (line for line in self.log if line.matches(needle, infra_only))


def _advance(s: Scenario, data: EventData) -> None:
    """Move a scenario along by one engine event; its phase comes from `protocol.events.phase`, as in snapshots.

    Applying an event twice leaves the row as applying it once: history and turns passed are set from
    the event's turn, never counted up.
    """
    if isinstance(data, AttemptStarted | HarnessDone | InfraFailure | SuiteStarted | AttemptTested):
        s.turn, s.attempt = data.turn, data.attempt
    match data:
        case AttemptStarted():
            s.status = "running"
            s.history = s.history[: s.turn]  # a retried scenario's final letter goes
            s.infra_try = data.infra_try
        case AttemptTested() if data.passed:
            s.turns_passed = s.turn + 1
            s.history = s.history[: s.turn] + ("P" if s.attempt == 1 else "R")
            s.last_failure = ""  # recovered: as `engine.standing` counts it, no failure stands after a pass
        case AttemptTested():
            s.last_failure = ",".join(data.categories) or "fail"
        case LlmCapped():
            s.last_failure = "cost cap"
        case InfraFailure():
            s.infra_try = data.infra_try
            s.last_failure = data.infra_kind
        case ScenarioFinished():
            s.status = data.status
            if data.status == "capped":  # the attempt the cap stopped is still tested, and may have passed
                s.last_failure = "cost cap"
            s.turns_passed = data.turns_passed
            s.reason = data.reason
            s.history = s.history[: s.turns_passed] + HISTORY_END.get(s.status, "")
        case _:
            pass
    step = step_after(data, s.infra_try)
    if step is not None or isinstance(data, ScenarioFinished):
        s.phase = phase(s.status, step)


def describe(event: Event, scenario: Scenario | None) -> tuple[str, str]:
    """One log line for an event and its severity."""
    d = event.data
    sid = scenario_of(d)
    who = label(scenario) if scenario is not None else (f"scenario #{sid}" if sid is not None else "")
    where = (
        f"turn {d.turn} attempt {d.attempt}"
        if isinstance(d, AttemptStarted | HarnessDone | InfraFailure | SuiteStarted | AttemptTested)
        else ""
    )
    match d:
        case InfraFailure():
            return (
                f"{who} {where}: {d.infra_kind}: {infra_text(d.infra_kind)}{_aside(d.detail)}",
                "infra",
            )
        case AttemptTested() if d.passed:
            return f"{who} {where}: passed {d.tests} tests", "ok"
        case AttemptTested():
            return f"{who} {where}: {d.failed_tests} of {d.tests} tests failed{_aside(','.join(d.categories))}", "fail"
        case AttemptStarted():
            extra = f", infra retry {d.infra_try}" if d.infra_try else ""
            return f"{who} {where}: started{extra}", "info"
        case ScenarioFinished():
            severity = {"done": "ok", "failed": "fail", "infra_failed": "infra", "capped": "error"}.get(
                d.status, "info"
            )
            return f"{who}: {d.status} after {d.turns_passed} turns{_aside(d.reason)}", severity
        case LlmWait():
            return (
                f"{who}: model endpoint trouble{_aside(d.reason)}; "
                f"waiting {d.wait_seconds} s (waited {d.waited} s so far)"
            ), "infra"
        case LlmUnavailable():
            return f"{who}: {infra_text('llm_unavailable')}: {d.reason}", "infra"
        case LlmCapped():
            return f"{who}: stopped by a cost cap: {d.reason}", "error"
        case LlmCall():
            return (f"{who} turn {d.turn}: {d.model} {d.input} in / {d.output} out tokens, {event_cost(d)}"), "info"
        case SweepFailed():
            return f"sweep failed: {d.error}", "error"
        case SweepStarted():
            return f"sweep started: {d.scenarios} scenarios x {d.configurations} configurations" + (
                " (resumed)" if d.resumed else ""
            ), "info"
        case HarnessDone():
            how = (
                f"signal {d.signal}"
                if d.signal is not None
                else f"exit {d.exit}"
                if d.exit is not None
                else "no status"
            )
            return f"{who} {where}: harness ended ({how})", "info"
        case SuiteStarted():
            return f"{who} {where}: server ready, testing", "info"
        case ManualPrompt():
            return f"{who}: waiting for a person: prompt {d.prompt}, workspace {d.workspace}; then {d.done}", "info"
        case _:
            rest = ", ".join(
                f"{k}={v}" for k, v in msgspec.structs.asdict(d).items() if k != "scenario" and v is not None
            )
            return f"{who} {event.kind} {rest}".strip(), "info"


def _aside(text: str | None) -> str:
    """` (text)`, or nothing for an absent or empty text: no event line shows `None` or `()`."""
    return f" ({text})" if text else ""


__all__ = ["INFRA_TEXT", "Board", "Change", "LogLine", "Scenario", "describe", "infra_text", "label"]
