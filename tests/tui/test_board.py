"""The monitor's model without Textual: events move scenarios along and become log lines."""

from __future__ import annotations

from protocol import Event, ScenarioList, ScenarioRow
from tui.board import Board


def _board() -> Board:
    board = Board()
    row = ScenarioRow(id=5, configuration="aider R=2 detailed", seed=0, status="running", turns_passed=1, turn=1,
                      attempt=1, infra_try=0, phase="agent working", last_failure="", history="P", reason="")
    board.set_scenarios(ScenarioList(sweep="s", retries={"aider R=2 detailed": 2}, scenarios=(row,)))
    return board


def _event(kind: str, seq: int, **data: object) -> Event:
    return Event(sweep="s", kind=kind, data={"scenario": 5, **data}, at=1000.0 + seq, seq=seq)


def test_model_waits_outages_and_caps_show_in_phase_history_and_log() -> None:
    """An LLM wait is a phase, an outage an infra line, a cap ends the history with C; replays are ignored."""
    board = _board()
    change = board.apply(_event("llm_wait", 1, turn=1, reason="upstream answered 429", wait_seconds=2.0,
                                waited=0.0))
    assert change.scenario is not None and change.scenario.phase == "waiting on the model"
    assert change.line is not None and change.line.severity == "infra" and "429" in change.line.text
    line = board.apply(_event("llm_unavailable", 2, turn=1, reason="gave up after 600 s")).line
    assert line is not None and "LLM endpoint was unavailable" in line.text
    board.apply(_event("llm_capped", 3, reason="scenario cost cap of $5.00 reached"))
    board.apply(_event("scenario_finished", 4, status="capped", turns_passed=1, reason="cost cap"))
    s = board.find("s", 5)
    assert s is not None and (s.status, s.history, s.last_failure) == ("capped", "PC", "cost cap")
    assert board.apply(_event("scenario_finished", 4, status="capped", turns_passed=1)).line is None
    assert [ln.kind for ln in board.lines(infra_only=True)] == ["llm_wait", "llm_unavailable", "llm_capped",
                                                                "scenario_finished"]
    assert board.max_attempts("s", "aider R=2 detailed") == 3


def test_events_a_snapshot_already_holds_move_nothing() -> None:
    """Events up to the snapshot's seq are logged but not folded again; later ones still move the row."""
    board = Board()
    row = ScenarioRow(id=5, configuration="c", seed=0, status="running", turns_passed=2, turn=1, attempt=1,
                      infra_try=0, phase="passed", last_failure="", history="PP", reason="")
    board.set_scenarios(ScenarioList(sweep="s", retries={"c": 2}, scenarios=(row,), seq=7))
    change = board.apply(_event("attempt_tested", 7, turn=1, attempt=1, passed=True, tests=9))
    assert change.scenario is None and change.line is not None
    s = board.find("s", 5)
    assert s is not None and (s.history, s.turns_passed, s.phase) == ("PP", 2, "passed")
    board.apply(_event("attempt_started", 8, turn=2, attempt=1, infra_try=0))
    assert (s.turn, s.phase) == (2, "agent working")
    board.reattached()  # a restarted daemon counts from 1 again: its events are folded
    board.apply(_event("attempt_tested", 1, turn=2, attempt=1, passed=True, tests=9))
    assert (s.history, s.turns_passed) == ("PPP", 3)


def test_folding_the_same_outcome_twice_changes_nothing() -> None:
    """A pass that raced the snapshot sets history[turn] instead of appending, so it is not counted twice."""
    board = _board()
    s = board.find("s", 5)
    assert s is not None
    board.apply(_event("attempt_tested", 1, turn=1, attempt=2, passed=True, tests=9))
    board.apply(_event("attempt_tested", 2, turn=1, attempt=2, passed=True, tests=9))
    assert (s.history, s.turns_passed) == ("PR", 2)
    board.apply(_event("scenario_finished", 3, status="failed", turns_passed=2, reason="turn 2 failed"))
    board.apply(_event("scenario_finished", 4, status="failed", turns_passed=2, reason="turn 2 failed"))
    assert (s.status, s.history) == ("failed", "PRF")


def test_a_retried_scenario_drops_its_final_letter_when_it_starts_again() -> None:
    """An infra_failed row (history ending in I) that the operator retried shows only its passed turns."""
    board = Board()
    row = ScenarioRow(id=5, configuration="c", seed=0, status="infra_failed", turns_passed=1, turn=1, attempt=1,
                      infra_try=0, phase="infra_failed", last_failure="self_kill", history="PI", reason="")
    board.set_scenarios(ScenarioList(sweep="s", retries={"c": 2}, scenarios=(row,)))
    board.apply(_event("attempt_started", 1, turn=1, attempt=1, infra_try=1))
    s = board.find("s", 5)
    assert s is not None and (s.status, s.history, s.phase) == ("running", "P", "infra retry")
    board.apply(_event("attempt_tested", 2, turn=1, attempt=1, passed=True, tests=9))
    assert s.history == "PP"
