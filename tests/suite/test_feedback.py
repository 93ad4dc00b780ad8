"""Feedback texts at the three levels: what each reveals, determinism and bounded length."""

from __future__ import annotations

from staminad.suite.feedback import MAX_DETAILED, MAX_NAMES, render_feedback
from staminad.suite.runner import SuiteResult, TestResult


def _result(n_fail: int, n_pass: int = 5) -> SuiteResult:
    fails = [
        TestResult(
            name=f"thing_{i}_rejects_null",
            category="validation",
            rule="null",
            passed=False,
            step=0,
            request=f'POST /thing {{"id": "t{i}"}}',
            status=201,
            response='{"id": "t"}',
            message="non-nullable x must reject null: POST /thing returned 201, expected 400 or 422",
        )
        for i in range(n_fail)
    ]
    oks = [TestResult(name=f"ok_{i}", category="validation", rule="null", passed=True) for i in range(n_pass)]
    return SuiteResult(seed=0, turn=0, results=tuple(fails + oks), seconds=0.1, requests=10)


def test_detailed_names_rule_request_and_response() -> None:
    """Detailed feedback gives each failing test's rule id, request and response."""
    text = render_feedback(_result(2), "detailed")
    assert "2 of 7 tests failed" in text
    assert "thing_0_rejects_null (README rule [null])" in text
    assert "request: POST /thing" in text and "response: 201" in text


def test_medium_lists_names_without_details() -> None:
    """Medium feedback lists failing test names and counts, but no requests or responses."""
    text = render_feedback(_result(2), "medium")
    assert "2 of 7 tests failed" in text and "- thing_1_rejects_null" in text
    assert "POST" not in text and "201" not in text


def test_minimal_says_only_that_something_failed() -> None:
    """Minimal feedback reveals neither names nor counts."""
    text = render_feedback(_result(2), "minimal")
    assert "thing_" not in text and "2 of" not in text and "failed" in text


def test_feedback_is_bounded_and_deterministic() -> None:
    """Thousands of failures still give a bounded, identical text each time."""
    big = _result(5000)
    detailed = render_feedback(big, "detailed")
    assert detailed == render_feedback(big, "detailed")
    assert detailed.count("request:") == MAX_DETAILED
    assert len(detailed) < 20_000
    medium = render_feedback(big, "medium")
    assert medium.count("\n- ") == MAX_NAMES + 1 and f"and {5000 - MAX_NAMES} more" in medium
