"""The events: one frozen Struct per kind in one tagged union, and the one definition of a scenario's phase.

The engine, the gateway and the daemon build these; the bus wraps each in an `Event` (sweep, time,
sequence number); the TUI, the metrics and `staminad run` read their fields by name. `phase` says where a
scenario stands from the step its last attempt reached: the board folds events into steps with
`step_after` and the daemon's snapshots read steps from the store, so a monitor that reconnects and one
that watched live show the same phase.
"""

from __future__ import annotations

from typing import assert_never

import msgspec

from protocol.kinds import FINAL, AttemptStep, FailureCategory, FinalStatus, InfraKind, Outcome, Phase, ScenarioStatus


class _Data(msgspec.Struct, frozen=True, tag_field="event", forbid_unknown_fields=True, kw_only=True):
    """Fields every event kind shares: none; the tag (`event`) names the kind."""


class _OfScenario(_Data, frozen=True):
    scenario: int  # the scenario's id in the store


class _OfRunner(_OfScenario, frozen=True):
    """An event of the engine's scenario runner, which names the scenario as people do."""

    configuration: str
    seed: int


class _OfAttempt(_OfRunner, frozen=True):
    turn: int
    attempt: int


class SweepStarted(_Data, tag="sweep_started", frozen=True):
    """`scenarios` seeds x `configurations`; `finished` of those already ended before (a resumed sweep).

    `resumed`: an earlier run of this sweep got as far as recording scenarios (a daemon restart, a retry, a
    second `run`); a first start, however long after its submission, is not resumed.
    """

    sweep: str
    resumed: bool
    scenarios: int
    configurations: int
    finished: int = 0


class SweepRuntime(_Data, tag="sweep_runtime", frozen=True):
    runtime: str


class SweepFinished(_Data, tag="sweep_finished", frozen=True):
    pass


class SweepFailed(_Data, tag="sweep_error", frozen=True):
    error: str


class AttemptStarted(_OfAttempt, tag="attempt_started", frozen=True):
    infra_try: int
    resumed: bool = False


class ManualPrompt(_OfRunner, tag="manual_prompt", frozen=True):
    """A manual configuration's turn: the person reads `prompt`, works in `workspace`, then runs `done`."""

    prompt: str
    workspace: str
    done: str


class HarnessDone(_OfAttempt, tag="harness_done", frozen=True):
    exit: int | None
    signal: int | None
    harness_seconds: float | None


class InfraFailure(_OfAttempt, tag="infra_failure", frozen=True):
    infra_try: int
    infra_kind: InfraKind
    detail: str


class SuiteStarted(_OfAttempt, tag="suite_started", frozen=True):
    server_seconds: float


class AttemptTested(_OfAttempt, tag="attempt_tested", frozen=True):
    passed: bool
    failed_tests: int
    tests: int
    categories: tuple[FailureCategory, ...]  # the failed tests' categories, or how the server failed
    suite_seconds: float
    server_seconds: float
    detail: str = ""


class ScenarioFinished(_OfRunner, tag="scenario_finished", frozen=True):
    status: FinalStatus
    turns_passed: int
    reason: str


class LlmCapped(_OfScenario, tag="llm_capped", frozen=True):
    reason: str


class LlmWait(_OfScenario, tag="llm_wait", frozen=True):
    turn: int
    reason: str
    wait_seconds: float
    waited: float


class LlmCall(_OfScenario, tag="llm_call", frozen=True):
    turn: int
    model: str
    input: int
    output: int
    cached: int
    cost: float
    status: int
    estimated: bool = False  # tokens counted from bytes: the provider reported none
    unpriced: bool = False  # its model has no price: `cost` is 0 but not known
    abandoned: bool = False  # the endpoint got it, nobody saw it through (no answer in time, cut off, cancelled)


def event_cost(d: LlmCall) -> str:
    """A call's cost as every event line shows it: exact, estimated (`~`), abandoned, or unpriced."""
    text = "unpriced" if d.unpriced else f"{'~' if d.estimated else ''}${d.cost:.4f}{' est.' if d.estimated else ''}"
    return text + (" (abandoned: the endpoint got it, nobody saw it through)" if d.abandoned else "")


class LlmUnavailable(_OfScenario, tag="llm_unavailable", frozen=True):
    turn: int
    reason: str


EVENT_KINDS = (
    SweepStarted,
    SweepRuntime,
    SweepFinished,
    SweepFailed,
    AttemptStarted,
    ManualPrompt,
    HarnessDone,
    InfraFailure,
    SuiteStarted,
    AttemptTested,
    ScenarioFinished,
    LlmCapped,
    LlmWait,
    LlmCall,
    LlmUnavailable,
)
EventData = (
    SweepStarted
    | SweepRuntime
    | SweepFinished
    | SweepFailed
    | AttemptStarted
    | ManualPrompt
    | HarnessDone
    | InfraFailure
    | SuiteStarted
    | AttemptTested
    | ScenarioFinished
    | LlmCapped
    | LlmWait
    | LlmCall
    | LlmUnavailable
)
KIND_NAMES = frozenset(str(k.__struct_config__.tag) for k in EVENT_KINDS)


def kind_of(data: EventData) -> str:
    """The event's kind as it travels (its tag), e.g. `attempt_tested`."""
    return str(data.__struct_config__.tag)


def scenario_of(data: EventData) -> int | None:
    """The scenario an event is about, or None for a sweep-wide one."""
    return data.scenario if isinstance(data, _OfScenario) else None


# --- phase ------------------------------------------------------------------------------------


def watchdog_deadline(
    launched_at: float, turn_timeout: float, waited: float = 0.0, resumed_at: float | None = None
) -> float:
    """When the turn watchdog fires for an attempt: its launch plus the turn timeout, extended by the seconds
    the gateway waited out model outages during it (that time is not the agent's). An attempt a restarted
    engine took up again (`resumed_at`) is watched from then: no engine knows when the one before it stopped
    (a kill -9 records nothing), and the time none ran is not the agent's either (its model's gateway was
    gone, its marker unread); `waited` then counts the outages since the resume. The engine waits until
    then; the monitor counts down to it."""
    return max(launched_at, resumed_at or 0.0) + turn_timeout + waited


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """How far a scenario's latest attempt got, as the store records it (attempt columns of the same name).

    `phase` is the attempt's stored step: launched -> harness_done -> tested.
    """

    attempt: int
    infra_try: int
    phase: AttemptStep
    outcome: Outcome | None


def phase(status: ScenarioStatus, last: Step | None) -> Phase:
    """Where a scenario stands, in words for people: from its status (the final ones are their own phase) and
    its latest attempt's step."""
    match status:
        case "done" | "failed" | "infra_failed" | "capped":
            return status
        case "pending" | "running":
            pass
        case _:
            assert_never(status)
    if last is None:
        return "pending"
    if last.phase == "launched":
        if last.infra_try:
            return "infra retry"
        return "retrying" if last.attempt > 1 else "agent working"
    if last.phase == "harness_done":
        return "testing"  # the server starting and the suite running are one stored step
    match last.outcome:
        case "pass":
            return "passed"
        case "fail":
            return "feedback"
        case "infra":
            return "infra wait"
        case None:
            return "pending"
        case _:
            assert_never(last.outcome)


def step_after(data: EventData, infra_try: int = 0) -> Step | None:
    """The step an attempt event moves a scenario to (what the engine writes to the store with it).

    None for an event that moves no step (a manual prompt, a model wait, the suite starting).
    `infra_try` is the scenario's current one, for events that do not carry it.
    """
    match data:
        case AttemptStarted() | InfraFailure():
            if isinstance(data, InfraFailure):
                return Step(attempt=data.attempt, infra_try=data.infra_try, phase="tested", outcome="infra")
            return Step(attempt=data.attempt, infra_try=data.infra_try, phase="launched", outcome=None)
        case HarnessDone():
            return Step(attempt=data.attempt, infra_try=infra_try, phase="harness_done", outcome=None)
        case AttemptTested():
            return Step(
                attempt=data.attempt, infra_try=infra_try, phase="tested", outcome="pass" if data.passed else "fail"
            )
        case _:
            return None


__all__ = [
    "EVENT_KINDS",
    "FINAL",
    "KIND_NAMES",
    "AttemptStarted",
    "AttemptTested",
    "EventData",
    "HarnessDone",
    "InfraFailure",
    "LlmCall",
    "LlmCapped",
    "LlmUnavailable",
    "LlmWait",
    "ManualPrompt",
    "ScenarioFinished",
    "Step",
    "SuiteStarted",
    "SweepFailed",
    "SweepFinished",
    "SweepRuntime",
    "SweepStarted",
    "event_cost",
    "kind_of",
    "phase",
    "scenario_of",
    "step_after",
    "watchdog_deadline",
]
