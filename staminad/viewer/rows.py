"""The rows the viewer's pages list, typed: a sweep's line on the front page, a configuration's headline, its
survival curve, a scenario's line in the scenarios x turns grid, and a pair of scenarios on the comparison page.

`model` builds them from the store's rows; the templates, `svg` and `site` read their attributes. A figure that
nothing scored gives is None (shown as `-`).
"""

from __future__ import annotations

import msgspec

from protocol.kinds import ScenarioStatus, SweepStatus


class ConfigSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A configuration's headline: what it ran, how far it got, its figures by the shared rule, and its cost."""

    name: str
    agent: str
    model: str  # "" when the store names none
    retries: int
    feedback: str
    scenarios: int
    finished: int
    mean: float | None  # None when nothing is scored
    se: float | None
    pass_rate: float | None
    scored: int
    unscored: int
    unfinished: int
    never_run: int
    counts: str  # `n=3; 1 unfinished, ...` (`staminad.engine.score.counts_text`)
    not_final: str  # why its numbers may still change, or ""
    statuses: dict[ScenarioStatus, int]  # scenarios per status
    cost: str | None  # US dollars through the gateway, estimates and unpriced calls marked; None without calls
    tokens: int | None
    n_turns: int


class SweepLine(msgspec.Struct, frozen=True, kw_only=True):
    """A sweep on the sweeps page: its status, how many of its scenarios finished, and its configurations' headlines."""

    id: str
    name: str
    status: SweepStatus
    turns: int | None  # the horizon N; None while not known
    scenarios: int
    finished: int
    attempts: int
    created: str  # when it was made, for people
    headline: list[ConfigSummary]


class Curve(msgspec.Struct, frozen=True, kw_only=True):
    """A configuration's Kaplan-Meier curve over its scored scenarios, for the sweep page's chart."""

    name: str
    tau: float  # N+1, where the curve ends
    times: list[float]
    survival: list[float]
    censored: list[float]  # turns survived by the scenarios that did not fail


class GridRow(msgspec.Struct, frozen=True, kw_only=True):
    """A scenario's line in the scenarios x turns grid: one cell per turn (P, R, F, I, C, ... or empty)."""

    configuration: str
    seed: int
    status: str
    phase: str
    turns_passed: int
    cells: list[str]
    last_failure: str


class Pair(msgspec.Struct, frozen=True, kw_only=True):
    """One seed on the comparison page: turns passed by configurations A and B, their statuses, A - B."""

    seed: int
    a: int
    b: int
    a_status: ScenarioStatus
    b_status: ScenarioStatus
    diff: int


__all__ = ["ConfigSummary", "Curve", "GridRow", "Pair", "SweepLine"]
