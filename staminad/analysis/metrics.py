"""Metrics over a configuration's scenarios: turns passed @R, pass rate, the retry-budget curve from one
run's history, survival data, failure-category counts, new-feature vs regression failures, LoC per turn.

Two views of infrastructure failures. The headline (`paper`) follows the paper: a scenario whose
harness kept failing until the infra retries ran out ended there, and its turns so far are its
score (a failure event in survival). The `censored` view counts only the agent's code: such a
scenario leaves the mean and is right-censored. In both, a scenario ended by a platform fault (a
lost container, an engine error, a model outage) is not the agent's result at all: it is left out
and can be re-run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import msgspec

from staminad.analysis.data import AttemptData, ConfigData, ScenarioData
from staminad.analysis.stats import mean_se
from staminad.engine import outcome

VIEWS = ("paper", "censored")


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    scenarios: int  # scored in this view
    mean_turns: float
    se_turns: float
    pass_rate: float
    infra_failed: int  # ended when the harness's infra retries ran out (scored in the paper view)
    platform_failed: int = 0  # ended by a platform fault: never scored, re-runnable
    view: str = "paper"


def end_kind(s: ScenarioData) -> str | None:
    """The infra kind that ended an `infra_failed` scenario (its last attempt's), else None."""
    if s.status != "infra_failed":
        return None
    last = max(s.attempts, key=lambda a: (a.turn, a.attempt, a.infra_try), default=None)
    return last.infra_kind if last is not None else None


def platform_ended(s: ScenarioData) -> bool:
    """Ended by a platform fault: not the agent's result, left out of every score."""
    return outcome.platform_ended(s.status, end_kind(s))


def harness_ended(s: ScenarioData) -> bool:
    return s.status == "infra_failed" and not platform_ended(s)


def scored(c: ConfigData, view: str = "paper") -> list[ScenarioData]:
    """The scenarios a view scores: all but platform-ended ones (paper), also without harness-ended ones
    (censored)."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; use one of {', '.join(VIEWS)}")
    return [s for s in c.scenarios if not platform_ended(s) and (view == "paper" or not harness_ended(s))]


def agent_attempts(s: ScenarioData) -> list[AttemptData]:
    """Tested attempts that count for the agent: infra outcomes are not the agent's."""
    return [a for a in s.attempts if a.outcome in ("pass", "fail")]


def summary(c: ConfigData, view: str = "paper") -> Summary:
    mine = scored(c, view)
    turns = [s.turns_passed for s in mine]
    mean, se = mean_se(turns)
    full = c.n_turns + 1
    return Summary(
        name=c.name,
        scenarios=len(turns),
        mean_turns=mean,
        se_turns=se,
        pass_rate=sum(t >= full for t in turns) / len(turns) if turns else float("nan"),
        infra_failed=sum(harness_ended(s) for s in c.scenarios),
        platform_failed=sum(platform_ended(s) for s in c.scenarios),
        view=view,
    )


def views_differ(c: ConfigData) -> bool:
    """Whether the paper and censored views score this configuration differently (harness-ended scenarios)."""
    return any(harness_ended(s) for s in c.scenarios)


def turns_at_budget(s: ScenarioData, budget: int, n_turns: int) -> int:
    """Turns passed had the retry budget been `budget` (<= the R it ran with): a turn that needed more
    than budget+1 agent attempts ends the scenario there."""
    by_turn: dict[int, list[AttemptData]] = {}
    for a in agent_attempts(s):
        by_turn.setdefault(a.turn, []).append(a)
    passed = 0
    for turn in range(n_turns + 1):
        tries = sorted(by_turn.get(turn, []), key=lambda a: a.attempt)
        first_pass = next((i for i, a in enumerate(tries, 1) if a.outcome == "pass"), None)
        if first_pass is None or first_pass > budget + 1:
            break
        passed += 1
    return passed


def retry_curve(c: ConfigData) -> list[tuple[int, float, float]]:
    """(R', mean turns passed, SE) for every R' from 0 to the configuration's R, from one run (paper view)."""
    out = []
    for budget in range(c.retries + 1):
        mean, se = mean_se([turns_at_budget(s, budget, c.n_turns) for s in scored(c)])
        out.append((budget, mean, se))
    return out


def survival_data(c: ConfigData, view: str = "paper") -> tuple[list[float], list[bool]]:
    """Turns survived per scored scenario and whether its end was an event (False: right-censored at N+1).

    Paper view: a harness that ran out of infra retries ended the scenario, an event like a failed
    turn. Censored view: it is right-censored there, as if it said nothing about the agent.
    Platform-ended scenarios are in neither.
    """
    mine = [s for s in c.scenarios if not platform_ended(s)]
    durations = [float(s.turns_passed) for s in mine]
    observed = [s.status == "failed" or (view == "paper" and harness_ended(s)) for s in mine]
    return durations, observed


def failure_counts(c: ConfigData, which: str) -> dict[str, int]:
    """Scenarios per failure category: `first` (the first failed attempt of each scenario) or `all`
    (every category seen in any failed attempt). Harness infra kinds count as categories of their own;
    platform faults are not the agent's and are not counted. Ordered by count (most first), then name, so a
    report lists them the same way on every run."""
    counts: Counter[str] = Counter()
    for s in c.scenarios:
        failed = [
            a
            for a in s.attempts
            if a.outcome == "fail" or (a.outcome == "infra" and not outcome.is_platform(a.infra_kind))
        ]
        if not failed:
            continue
        chosen: Iterable[AttemptData] = failed[:1] if which == "first" else failed
        cats: set[str] = set()
        for a in chosen:
            cats |= {a.infra_kind} if a.outcome == "infra" and a.infra_kind else set(a.categories)
        counts.update(cats)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def regressions(c: ConfigData) -> tuple[int, int]:
    """(failing tests that passed on an earlier turn, failing tests never passed before), over all attempts."""
    regress = new = 0
    for s in c.scenarios:
        passed_before: set[str] = set()
        current_turn = -1
        pending: set[str] = set()
        for a in sorted(agent_attempts(s), key=lambda a: (a.turn, a.attempt)):
            if a.turn != current_turn:
                passed_before |= pending
                pending = set()
                current_turn = a.turn
            for name in a.failed_tests:
                if name in passed_before:
                    regress += 1
                else:
                    new += 1
            pending |= set(a.passed_tests)
    return regress, new


def loc_by_turn(c: ConfigData) -> list[tuple[int, float, float, int]]:
    """(turn, mean LoC, SE, scenarios) from the last recorded attempt of each turn."""
    per_turn: dict[int, list[float]] = {}
    for s in c.scenarios:
        last: dict[int, int] = {}
        for a in s.attempts:
            if a.loc is not None:
                last[a.turn] = a.loc
        for turn, loc in last.items():
            per_turn.setdefault(turn, []).append(float(loc))
    out = []
    for turn in sorted(per_turn):
        mean, se = mean_se(per_turn[turn])
        out.append((turn, mean, se, len(per_turn[turn])))
    return out
