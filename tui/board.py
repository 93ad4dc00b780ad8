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

from protocol import Event, ScenarioList, ScenarioRow, SweepInfo, SweepList
from protocol.messages import HISTORY_END

LOG_LINES = 5000

# Why an attempt was an infrastructure failure, in words an operator acts on.
INFRA_TEXT = {
    "self_kill": "the agent killed its own harness (a broad pkill)",
    "stuck": "no marker within the turn timeout (hang)",
    "harness_crash": "the harness crashed",
    "harness_killed": "the harness was killed by a signal",
    "sandbox_exited": "the container was ended from inside",
    "sandbox_lost": "the sandbox was lost (removed, killed or paused)",
    "engine_error": "the container engine failed",
    "port_taken": "a program outside the sandbox holds the server port",
    "llm_unavailable": "the LLM endpoint was unavailable",
}


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
        data = event.data
        sid = data.get("scenario")
        scenario = self.find(event.sweep, sid) if isinstance(sid, int) else None
        if isinstance(sid, int) and scenario is None:
            change.unknown_scenario = True
        if scenario is not None and event.seq > self._snapshot_seq.get(event.sweep, 0):
            phase = scenario.phase
            _advance(scenario, event.kind, data)
            if scenario.phase != phase or event.kind == "attempt_started":
                scenario.since = event.at
            if event.kind == "attempt_started":  # the engine's watchdog counts from the launch
                scenario.deadline = event.at + self.turn_timeout.get(event.sweep, 0.0) \
                    if self.turn_timeout.get(event.sweep) else 0.0
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


def _advance(s: Scenario, kind: str, data: dict[str, object]) -> None:
    """Move a scenario along by one engine event (the same phases the daemon derives from its rows).

    Applying an event twice leaves the row as applying it once: history and turns passed are set from
    the event's turn, never counted up.
    """
    turn, attempt = data.get("turn"), data.get("attempt")
    if isinstance(turn, int):
        s.turn = turn
    if isinstance(attempt, int):
        s.attempt = attempt
    if kind == "attempt_started":
        s.status = "running"
        s.history = s.history[:s.turn]  # a retried scenario's final letter goes
        s.infra_try = int(data.get("infra_try", 0) or 0)  # type: ignore[call-overload]
        s.phase = "infra retry" if s.infra_try else "retrying" if s.attempt > 1 else "agent working"
    elif kind == "manual_prompt":
        s.phase = "waiting for a person"
    elif kind == "harness_done":
        s.phase = "server starting"
    elif kind == "suite_started":
        s.phase = "testing"
    elif kind == "attempt_tested":
        if data.get("passed"):
            s.phase = "passed"
            s.turns_passed = s.turn + 1
            s.history = s.history[:s.turn] + ("P" if s.attempt == 1 else "R")
        else:
            s.phase = "feedback"
            s.last_failure = str(data.get("categories") or "fail")
    elif kind == "llm_wait":
        s.phase = "waiting on the model"
    elif kind == "llm_capped":
        s.last_failure = "cost cap"
    elif kind == "infra_failure":
        s.phase = "infra wait"
        s.last_failure = str(data.get("kind", "infra"))
    elif kind == "scenario_finished":
        s.status = s.phase = str(data.get("status", s.status))
        s.turns_passed = int(data.get("turns_passed", s.turns_passed))  # type: ignore[call-overload]
        s.reason = str(data.get("reason", ""))
        s.history = s.history[:s.turns_passed] + HISTORY_END.get(s.status, "")


def describe(event: Event, scenario: Scenario | None) -> tuple[str, str]:
    """One log line for an event and its severity."""
    d = event.data
    who = label(scenario) if scenario is not None else (f"scenario #{d['scenario']}" if "scenario" in d else "")
    where = f"turn {d.get('turn')} attempt {d.get('attempt')}" if "turn" in d else ""
    match event.kind:
        case "infra_failure":
            kind = str(d.get("kind"))
            return f"{who} {where}: {kind}: {INFRA_TEXT.get(kind, kind)} ({d.get('detail', '')})", "infra"
        case "attempt_tested" if d.get("passed"):
            return f"{who} {where}: passed {d.get('tests')} tests", "ok"
        case "attempt_tested":
            return f"{who} {where}: {d.get('failed_tests')} of {d.get('tests')} tests failed ({d.get('categories')})", \
                "fail"
        case "attempt_started":
            extra = f", infra retry {d.get('infra_try')}" if d.get("infra_try") else ""
            return f"{who} {where}: started{extra}", "info"
        case "scenario_finished":
            severity = {"done": "ok", "failed": "fail", "infra_failed": "infra", "capped": "error"}.get(
                str(d.get("status")), "info")
            return f"{who}: {d.get('status')} after {d.get('turns_passed')} turns ({d.get('reason', '')})", severity
        case "llm_wait":
            return (f"{who}: model endpoint trouble ({d.get('reason')}); waiting {d.get('wait_seconds')} s "
                    f"(waited {d.get('waited')} s so far)"), "infra"
        case "llm_unavailable":
            return f"{who}: {INFRA_TEXT['llm_unavailable']}: {d.get('reason')}", "infra"
        case "llm_capped":
            return f"{who}: stopped by a cost cap: {d.get('reason')}", "error"
        case "llm_call":
            return (f"{who} turn {d.get('turn')}: {d.get('model')} {d.get('input')} in / {d.get('output')} out "
                    f"tokens, ${d.get('cost')}"), "info"
        case "sweep_error":
            return f"sweep failed: {d.get('error')}", "error"
        case "sweep_started":
            return f"sweep started: {d.get('scenarios')} scenarios x {d.get('configurations')} configurations" + (
                " (resumed)" if d.get("resumed") else ""), "info"
        case "harness_done":
            return f"{who} {where}: harness ended (exit {d.get('exit')}, signal {d.get('signal')})", "info"
        case "suite_started":
            return f"{who} {where}: server ready, testing", "info"
        case _:
            rest = ", ".join(f"{k}={v}" for k, v in d.items() if k != "scenario")
            return f"{who} {rest}".strip(), "info"


__all__ = ["INFRA_TEXT", "Board", "Change", "LogLine", "Scenario", "describe", "label"]
