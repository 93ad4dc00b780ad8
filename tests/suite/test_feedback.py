"""Feedback texts at the three levels: what each reveals, determinism and bounded length."""

from __future__ import annotations

from staminad.suite.feedback import MAX_DETAILED, MAX_GROUP_NAMES, MAX_NAMES, render_feedback
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
            message=f"non-nullable x{i} must reject null: POST /thing returned 201, expected 400 or 422",
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


def _reset_404(name: str) -> TestResult:
    """A test that failed at its setup: `POST /reset` answered 404."""
    return TestResult(
        name=name,
        category="missing_feature",  # what the runner gives a 404 to `POST /reset`
        rule=f"rule-{name[-1]}",
        passed=False,
        step=-1,
        request="POST /reset",
        status=404,
        response="Not Found",
        message="POST /reset must succeed: POST /reset returned 404, expected 200 or 204",
    )


def test_failures_of_one_setup_step_are_one_entry() -> None:
    """15 tests failing at `POST /reset` with a 404 are one entry naming the step, some tests and the count."""
    fails = [_reset_404(f"test_{i:02d}") for i in range(15)] + list(_result(1, 0).results)
    text = render_feedback(SuiteResult(seed=0, turn=0, results=tuple(fails), seconds=0.1, requests=16), "detailed")
    entries = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(entries) == 2 and "16 of 16 tests failed." in text
    assert entries[0].startswith("- 15 tests failed at their setup step `POST /reset` (README rules [rule-0], ")
    assert entries[0].endswith(
        ": POST /reset must succeed: POST /reset returned 404, expected 200 or 204 - e.g. "
        f"{', '.join(f'test_{i:02d}' for i in range(MAX_GROUP_NAMES))} and {15 - MAX_GROUP_NAMES} more"
    )
    assert text.count("request: POST /reset") == 1 and text.count("response: 404 Not Found") == 1
    assert entries[1].startswith("- thing_0_rejects_null (README rule [null]): ")


def test_tests_not_run_are_one_entry_saying_why() -> None:
    """The tests left unrun after the server died are one entry with the reason, not one line each."""
    gone = [
        TestResult(name=f"t{i}", category="server_crash", rule="r", passed=False, message="not run: gone")
        for i in range(3)
    ]
    result = SuiteResult(seed=0, turn=0, results=tuple(gone), seconds=0.1, requests=3, server_died=True)
    entries = [line for line in render_feedback(result, "detailed").splitlines() if line.startswith("- ")]
    assert entries == ["- 3 tests (README rule [r]): not run: gone - t0, t1, t2"]


def test_grouped_feedback_is_bounded() -> None:
    """Thousands of failures of one cause are one bounded entry naming a few tests and the count."""
    same = [_reset_404(f"test_{i}") for i in range(5000)]
    result = SuiteResult(seed=0, turn=0, results=tuple(same), seconds=0.1, requests=5000)
    detailed = render_feedback(result, "detailed")
    assert detailed.count("\n- ") == 1 and f"and {5000 - MAX_GROUP_NAMES} more" in detailed
    assert len(detailed) < 2_000
