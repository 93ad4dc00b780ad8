"""The monitor's model without Textual: events move scenarios along and become log lines."""

from __future__ import annotations

from typing import TypedDict

from protocol import Event, ScenarioList, ScenarioRow
from protocol.events import (
    AttemptStarted,
    AttemptTested,
    EventData,
    LlmCapped,
    LlmUnavailable,
    LlmWait,
    ScenarioFinished,
)
from protocol.kinds import FinalStatus
from tui.board import Board


class Who(TypedDict):
    """Which scenario an event is about."""

    scenario: int
    configuration: str
    seed: int


WHO: Who = {"scenario": 5, "configuration": "c", "seed": 0}


def _board() -> Board:
    board = Board()
    row = ScenarioRow(
        id=5,
        configuration="aider R=2 detailed",
        seed=0,
        status="running",
        turns_passed=1,
        turn=1,
        attempt=1,
        infra_try=0,
        phase="agent working",
        last_failure="",
        history="P",
        reason="",
    )
    board.set_scenarios(ScenarioList(sweep="s", retries={"aider R=2 detailed": 2}, scenarios=(row,)))
    return board


def _event(data: EventData, seq: int) -> Event:
    return Event(sweep="s", data=data, at=1000.0 + seq, seq=seq)


def _tested(turn: int, attempt: int, passed: bool = True) -> AttemptTested:
    return AttemptTested(
        **WHO,
        turn=turn,
        attempt=attempt,
        passed=passed,
        failed_tests=0 if passed else 1,
        tests=9,
        categories=() if passed else ("validation",),
        suite_seconds=0.1,
        server_seconds=0.1,
    )


def _finished(status: FinalStatus, turns_passed: int, reason: str = "") -> ScenarioFinished:
    return ScenarioFinished(**WHO, status=status, turns_passed=turns_passed, reason=reason)


def test_model_waits_outages_and_caps_show_in_phase_history_and_log() -> None:
    """LLM waits and outages are infra lines, a cap ends the history with C, and replays are ignored."""
    board = _board()
    change = board.apply(
        _event(LlmWait(scenario=5, turn=1, reason="upstream answered 429", wait_seconds=2.0, waited=0.0), 1)
    )
    assert change.scenario is not None and change.scenario.phase == "agent working"
    assert change.line is not None and change.line.severity == "infra" and "429" in change.line.text
    line = board.apply(_event(LlmUnavailable(scenario=5, turn=1, reason="gave up after 600 s"), 2)).line
    assert line is not None and "LLM endpoint was unavailable" in line.text
    board.apply(_event(LlmCapped(scenario=5, reason="scenario cost cap of $5.00 reached"), 3))
    board.apply(_event(_finished("capped", 1, "cost cap"), 4))
    s = board.find("s", 5)
    assert s is not None and (s.status, s.history, s.last_failure, s.phase) == ("capped", "PC", "cost cap", "capped")
    assert board.apply(_event(_finished("capped", 1), 4)).line is None
    assert [ln.kind for ln in board.lines(infra_only=True)] == [
        "llm_wait",
        "llm_unavailable",
        "llm_capped",
        "scenario_finished",
    ]
    assert board.max_attempts("s", "aider R=2 detailed") == 3


def test_a_scenario_that_recovered_shows_no_last_failure() -> None:
    """A failure a later pass recovered from is cleared, so a done scenario never reads "last failure X"."""
    board = _board()
    board.apply(_event(AttemptStarted(**WHO, turn=1, attempt=1, infra_try=0), 1))
    board.apply(_event(_tested(1, 1, passed=False), 2))
    s = board.find("s", 5)
    assert s is not None and s.last_failure == "validation"
    board.apply(_event(_tested(1, 2), 3))
    board.apply(_event(_finished("done", 2), 4))
    assert (s.status, s.history, s.last_failure) == ("done", "PR", "")


def test_events_a_snapshot_already_holds_move_nothing() -> None:
    """Events up to the snapshot's seq are logged but not folded again; later ones still move the row."""
    board = Board()
    row = ScenarioRow(
        id=5,
        configuration="c",
        seed=0,
        status="running",
        turns_passed=2,
        turn=1,
        attempt=1,
        infra_try=0,
        phase="passed",
        last_failure="",
        history="PP",
        reason="",
    )
    board.set_scenarios(ScenarioList(sweep="s", retries={"c": 2}, scenarios=(row,), seq=7))
    change = board.apply(_event(_tested(1, 1), 7))
    assert change.scenario is None and change.line is not None
    s = board.find("s", 5)
    assert s is not None and (s.history, s.turns_passed, s.phase) == ("PP", 2, "passed")
    board.apply(_event(AttemptStarted(**WHO, turn=2, attempt=1, infra_try=0), 8))
    assert (s.turn, s.phase) == (2, "agent working")
    board.reattached()  # a restarted daemon counts from 1 again: its events are folded
    board.apply(_event(_tested(2, 1), 1))
    assert (s.history, s.turns_passed) == ("PPP", 3)


def test_folding_the_same_outcome_twice_changes_nothing() -> None:
    """A pass that raced the snapshot sets history[turn] instead of appending, so it is not counted twice."""
    board = _board()
    s = board.find("s", 5)
    assert s is not None
    board.apply(_event(_tested(1, 2), 1))
    board.apply(_event(_tested(1, 2), 2))
    assert (s.history, s.turns_passed) == ("PR", 2)
    board.apply(_event(_finished("failed", 2, "turn 2 failed"), 3))
    board.apply(_event(_finished("failed", 2, "turn 2 failed"), 4))
    assert (s.status, s.history) == ("failed", "PRF")


def test_a_retried_scenario_drops_its_final_letter_when_it_starts_again() -> None:
    """An infra_failed row (history ending in I) that the operator retried shows only its passed turns."""
    board = Board()
    row = ScenarioRow(
        id=5,
        configuration="c",
        seed=0,
        status="infra_failed",
        turns_passed=1,
        turn=1,
        attempt=1,
        infra_try=0,
        phase="infra_failed",
        last_failure="self_kill",
        history="PI",
        reason="",
    )
    board.set_scenarios(ScenarioList(sweep="s", retries={"c": 2}, scenarios=(row,)))
    board.apply(_event(AttemptStarted(**WHO, turn=1, attempt=1, infra_try=1), 1))
    s = board.find("s", 5)
    assert s is not None and (s.status, s.history, s.phase) == ("running", "P", "infra retry")
    board.apply(_event(_tested(1, 1), 2))
    assert s.history == "PP"


def test_a_harness_end_names_its_exit_or_its_signal_never_none() -> None:
    """`harness ended (exit 0)` or `(signal 9)`: the missing half of exit/signal is not printed as `None`."""
    from protocol.events import HarnessDone
    from tui.board import describe

    ended = [
        describe(_event(HarnessDone(**WHO, turn=1, attempt=1, exit=e, signal=s, harness_seconds=1.0), 1), None)[0]
        for e, s in ((0, None), (None, 9), (None, None))
    ]
    assert [text.rsplit(": ", 1)[1] for text in ended] == [
        "harness ended (exit 0)",
        "harness ended (signal 9)",
        "harness ended (no status)",
    ]
