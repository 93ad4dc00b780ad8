"""The report as typed data: what `report.build` computes and the Markdown, LaTeX, CSV and figures read.

Field order is the JSON's key order (`staminad report --format json` writes `to_json`), so a field is never
moved without meaning to change that file. An optional field whose value is None is left out of the JSON
(`omit_defaults`), as the report always did: `p_holm` of a row's best cell, the Kaplan-Meier details and the
log-rank test of a survival entry with nothing observed or of the reference configuration, the grid on one
model. A float the data cannot give (no scenario scored) is NaN here and null in the JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec

from staminad.analysis.metrics import Summary


class Cell(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One configuration in the main table (agent row x setting column), with its denominators and tests."""

    mean: float
    se: float
    pass_rate: float
    n: int  # scenarios scored
    unscored: int
    unfinished: int
    never_run: int
    best: bool  # the row's best mean (the one the others are tested against)
    bold: bool  # shows the best mean as printed (ties all bold)
    p_vs_best: float  # paired Wilcoxon against the row's best, uncorrected (1.0 for the best itself)
    not_worse: bool
    p_holm: float | None = None  # Holm-corrected over the table; None for a row's best


class Table(msgspec.Struct, frozen=True, kw_only=True):
    """The paper's main table: rows are agents (agent @ model on several models), columns R and feedback."""

    rows: list[str]
    columns: list[str]
    cells: dict[str, dict[str, Cell]]  # row -> column -> cell, only where the configuration exists


class GridCell(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One harness on one model at one setting, tested against the harness's best model."""

    mean: float
    se: float
    pass_rate: float
    n: int
    paired: int  # scenarios scored by both this model and the best one
    best: bool
    p_vs_best: float
    p_holm: float | None = None


class Grid(msgspec.Struct, frozen=True, kw_only=True):
    """Harness x model for each setting, present when the configurations ran on more than one model."""

    agents: list[str]
    models: list[str]
    settings: list[str]
    cells: dict[str, dict[str, dict[str, GridCell]]]  # setting -> agent -> model -> cell


class LogRank(msgspec.Struct, frozen=True, kw_only=True):
    against: str  # the configuration with the best mean
    chi2: float
    p: float


class SurvivalEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A configuration's Kaplan-Meier curve and RMST over its scored scenarios; the details only when any was."""

    tau: float  # N+1, where survival is right-censored
    scored: int
    unscored: int
    unfinished: int
    never_run: int
    rmst: float
    rmst_ci: list[float]
    km_times: list[float]
    km_survival: list[float]
    events: int
    censored: int
    km_at_risk: list[int] | None = None
    km_events: list[int] | None = None
    censored_times: list[float] | None = None
    logrank_vs_best: LogRank | None = None  # None for the reference configuration itself


class ConfigRow(msgspec.Struct, frozen=True, kw_only=True):
    """A configuration as the report lists it: what it ran, its denominators and its headline summary."""

    name: str
    sweep: str
    agent: str
    model: str
    retries: int
    feedback: str
    n_turns: int
    unscored: int
    unfinished: int
    never_run: int
    scenarios: int  # scored
    mean_turns: float
    se_turns: float
    pass_rate: float
    infra_failed: int
    platform_failed: int
    view: str


class Counts(msgspec.Struct, frozen=True, kw_only=True):
    """Where a configuration's scenarios stand: scored, the three kinds left out, and all of them."""

    scored: int
    unscored: int
    unfinished: int
    never_run: int
    total: int


class Regressions(msgspec.Struct, frozen=True, kw_only=True):
    regression: int  # failing tests that passed on an earlier turn
    new_feature: int  # failing tests never passed before


class Views(msgspec.Struct, frozen=True, kw_only=True):
    """Both views of a configuration whose harness ran out of infra retries somewhere (they differ)."""

    paper: Summary
    censored: Summary


class CostScenario(msgspec.Struct, frozen=True, kw_only=True):
    seed: int
    turns_passed: int
    status: str
    cost: float  # US dollars over all its turns
    cost_by_turn: list[tuple[int, float]]


class CostConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A configuration's cost study: its scenarios, and (budget, mean turns within it, SE) at each budget."""

    scenarios: list[CostScenario]
    budget_curve: list[tuple[float, float, float]] = []


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a report shows. Keyed by configuration name (`sweep/name` over several sweeps) in table order."""

    final: bool
    not_final: list[str]  # one line per sweep whose numbers may still change
    turns: list[str]
    configurations: list[ConfigRow]
    scenarios: dict[str, Counts]
    table: Table
    grid: Grid | None  # on more than one model only (left out of the JSON otherwise)
    retry_curves: dict[str, list[tuple[int, float, float]]]  # (R', mean, SE) for each R' up to R
    survival: dict[str, SurvivalEntry]
    failures_first: dict[str, dict[str, int]]  # most scenarios first, then by name
    failures_all: dict[str, dict[str, int]]
    regressions: dict[str, Regressions]
    loc_by_turn: dict[str, list[tuple[int, float, float, int]]]  # (turn, mean LoC, SE, scenarios)
    views: dict[str, Views]
    cost: str  # what the cost study found, or why there is none
    cost_study: dict[str, CostConfig] | None = None  # from the gateway's records (`cost.study`), None without


def missing(value: float | None) -> bool:
    """Whether a figure is absent: NaN (nothing scored) or None."""
    return value is None or math.isnan(value)


def clean(value: Any) -> Any:
    """NaN to None, recursively, so the JSON is valid."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def plain(report: Report) -> dict[str, Any]:
    """The report as the JSON's objects, NaN as None: no `grid` on one model, `cost_study` always."""
    out: dict[str, Any] = clean(msgspec.to_builtins(report))
    if report.grid is None:
        del out["grid"]
    return out


def to_json(report: Report) -> str:
    """What `staminad report --format json` writes."""
    return json.dumps(plain(report), indent=2)


__all__ = [
    "Cell",
    "ConfigRow",
    "CostConfig",
    "CostScenario",
    "Counts",
    "Grid",
    "GridCell",
    "LogRank",
    "Regressions",
    "Report",
    "SurvivalEntry",
    "Table",
    "Views",
    "clean",
    "missing",
    "plain",
    "to_json",
]
