"""Scoring infra endings: harness-ended scenarios count as in the paper, platform-ended ones are left out."""

from __future__ import annotations

from staminad.analysis.data import AttemptData, ConfigData, ScenarioData
from staminad.analysis.metrics import failure_counts, retry_curve, summary, survival_data, views_differ
from staminad.analysis.report import build, markdown


def _attempt(turn: int, outcome: str, kind: str | None = None, infra_try: int = 0) -> AttemptData:
    return AttemptData(
        turn=turn,
        attempt=1,
        infra_try=infra_try,
        outcome=outcome,
        infra_kind=kind,
        categories=(),
        loc=None,
        failed_tests=(),
        passed_tests=(),
    )


def _scenario(seed: int, status: str, passed: int, end: tuple[str, str | None] | None = None) -> ScenarioData:
    attempts = [_attempt(t, "pass") for t in range(passed)]
    if end is not None:
        attempts += [_attempt(passed, end[0], end[1], i) for i in range(3)]
    return ScenarioData(seed=seed, status=status, turns_passed=passed, attempts=tuple(attempts))


def _config(*scenarios: ScenarioData) -> ConfigData:
    return ConfigData(
        sweep="s",
        name="agent R=0 detailed",
        agent="agent",
        retries=0,
        feedback="detailed",
        n_turns=4,
        scenarios=scenarios,
    )


CONFIG = _config(
    _scenario(0, "done", 5),
    _scenario(1, "failed", 3, ("fail", None)),
    _scenario(2, "infra_failed", 1, ("infra", "self_kill")),  # the harness kept killing itself: scored
    _scenario(3, "infra_failed", 0, ("infra", "sandbox_lost")),  # the platform failed: not the agent's
)


def test_the_headline_scores_harness_ended_scenarios_and_leaves_platform_ended_ones_out() -> None:
    """Paper view: (5 + 3 + 1) / 3; the platform-ended scenario is in no mean and no survival curve."""
    s = summary(CONFIG)
    assert (s.scenarios, s.mean_turns, s.infra_failed, s.platform_failed) == (3, 3.0, 1, 1)
    durations, events = survival_data(CONFIG)
    assert durations == [5.0, 3.0, 1.0] and events == [False, True, True]
    assert retry_curve(CONFIG)[0][1] == 3.0


def test_the_censored_view_counts_only_the_agents_code() -> None:
    """Censored view: the harness-ended scenario leaves the mean and is right-censored in survival."""
    s = summary(CONFIG, "censored")
    assert (s.scenarios, s.mean_turns) == (2, 4.0)
    assert survival_data(CONFIG, "censored") == ([5.0, 3.0, 1.0], [False, True, False])


def test_failure_counts_show_harness_kinds_but_not_platform_faults() -> None:
    """A harness kind is a category of its own in the failure counts; a platform fault is not the agent's."""
    counts = failure_counts(CONFIG, "first")
    assert counts["self_kill"] == 1 and "sandbox_lost" not in counts


def test_the_report_shows_both_views_only_where_they_differ() -> None:
    """The report lists the censored view for a configuration with a harness-ended scenario, and only then."""
    plain = _config(_scenario(0, "done", 5), _scenario(1, "infra_failed", 0, ("infra", "engine_error")))
    assert views_differ(CONFIG) and not views_differ(plain)
    report = build([CONFIG], n_boot=50)
    assert set(report.views) == {CONFIG.name}
    assert "over 2 scenarios (paper: 3.0 over 3)" in markdown(report)
    assert build([plain], n_boot=50).views == {}
