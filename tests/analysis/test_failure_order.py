"""Failure categories are listed in one order on every run: most scenarios first, then by name."""

from __future__ import annotations

from staminad.analysis.data import AttemptData, ConfigData, ScenarioData
from staminad.analysis.metrics import failure_counts
from staminad.analysis.report import build


def _failed(turn: int, *categories: str) -> AttemptData:
    return AttemptData(
        turn=turn,
        attempt=1,
        infra_try=0,
        outcome="fail",
        infra_kind=None,
        categories=categories,
        loc=None,
        failed_tests=(),
        passed_tests=(),
    )


CONFIG = ConfigData(
    sweep="s",
    name="agent R=0 detailed",
    agent="agent",
    retries=0,
    feedback="detailed",
    n_turns=3,
    scenarios=(
        ScenarioData(seed=0, status="failed", turns_passed=0, attempts=(_failed(0, "zeta", "alpha", "mid"),)),
        ScenarioData(seed=1, status="failed", turns_passed=0, attempts=(_failed(0, "mid"), _failed(1, "beta"))),
        ScenarioData(seed=2, status="failed", turns_passed=0, attempts=(_failed(0, "zeta"),)),
    ),
)


def test_failure_counts_are_ordered_by_count_then_name() -> None:
    """Ties in count are broken by name, whatever order the categories were seen in."""
    assert list(failure_counts(CONFIG, "first").items()) == [("mid", 2), ("zeta", 2), ("alpha", 1)]
    assert list(failure_counts(CONFIG, "all").items()) == [("mid", 2), ("zeta", 2), ("alpha", 1), ("beta", 1)]


def test_the_report_keeps_that_order() -> None:
    """The report's failure counts (and so its JSON) list the categories in the same order."""
    report = build([CONFIG], n_boot=20)
    assert list(report.failures_first[CONFIG.name]) == ["mid", "zeta", "alpha"]
    assert list(report.failures_all[CONFIG.name]) == ["mid", "zeta", "alpha", "beta"]
