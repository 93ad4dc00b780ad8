"""The cost study (paper: cost vs stamina): dollars per scenario and turns passed within a cost budget.

Read from the model calls the LLM gateway recorded (`llm_calls`); a store without them has no cost study,
and says so instead of drawing zeros.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec

from staminad.analysis.reportdata import CostConfig, CostScenario
from staminad.analysis.stats import mean_se
from state import browse, queries
from state.money import CallMoney, money_columns, money_of, total

NO_USAGE = "no token or cost data recorded for these sweeps (needs the LLM gateway)"


class CostStudy(msgspec.Struct, frozen=True, kw_only=True):
    """Per configuration its scenarios' cost and turns and the budget curve (None without usage), and a line
    saying what was spent, or why there is no study."""

    configurations: dict[str, CostConfig] | None
    text: str


def study(db: Path, sweeps: list[str] | None = None, points: int = 25) -> CostStudy:
    """The cost study of the sweeps (all of the store's by default) from the gateway's records."""
    conn = queries.connect_readonly(db)
    try:
        return _study(conn, sweeps or queries.sweep_ids(conn), points)
    finally:
        conn.close()


def _study(conn: sqlite3.Connection, sweeps: list[str], points: int) -> CostStudy:
    if not browse.has_table(conn, "llm_calls"):
        return CostStudy(configurations=None, text=NO_USAGE)
    found: dict[str, list[CostScenario]] = {}
    for sweep in sweeps:
        per_turn: dict[int, dict[int, float]] = {}
        for r in conn.execute(
            "SELECT l.scenario_id, l.turn, SUM(l.cost) AS cost FROM llm_calls l "
            "JOIN scenarios s ON s.id = l.scenario_id JOIN configurations c ON c.id = s.config_id "
            "WHERE c.sweep_id = ? GROUP BY l.scenario_id, l.turn",
            (sweep,),
        ):
            per_turn.setdefault(int(r["scenario_id"]), {})[int(r["turn"])] = float(r["cost"] or 0.0)
        for s in browse.scenarios(conn, sweep):
            turns = per_turn.get(s.id, {})
            found.setdefault(s.configuration, []).append(
                CostScenario(
                    seed=s.seed,
                    turns_passed=s.turns_passed,
                    status=s.status,
                    cost=sum(turns.values()),
                    cost_by_turn=sorted(turns.items()),
                )
            )
    money = _money(conn, sweeps)
    spent = ", ".join(f"{name} {money.get(name, CallMoney()).text()}" for name in found)
    marks = _marks(list(money.values()))
    total = sum(x.cost for xs in found.values() for x in xs)
    if total <= 0:
        text = f"no cost study: every recorded call is unpriced ({spent}){marks}" if money else NO_USAGE
        return CostStudy(configurations=None, text=text)
    top = max(x.cost for xs in found.values() for x in xs)
    budgets = [top * i / (points - 1) for i in range(points)]
    configs = {
        name: CostConfig(
            scenarios=xs,
            budget_curve=[(b, *mean_se([float(turns_within(x, b)) for x in xs])) for b in budgets],
        )
        for name, xs in found.items()
    }
    return CostStudy(configurations=configs, text=f"spent through the gateway: {spent}{marks}")


def _money(conn: sqlite3.Connection, sweeps: list[str]) -> dict[str, CallMoney]:
    """The model calls of each configuration of the sweeps (`state.money`), in the order they were made."""
    out: dict[str, CallMoney] = {}
    for sweep in sweeps:
        sql = (
            f"SELECT c.name, {money_columns(conn)} FROM llm_calls l "  # noqa: S608 - column names, no input
            "JOIN scenarios s ON s.id = l.scenario_id JOIN configurations c ON c.id = s.config_id "
            "WHERE c.sweep_id = ? GROUP BY c.id ORDER BY c.id"
        )
        for r in conn.execute(sql, (sweep,)):
            out[str(r[0])] = total([out.get(str(r[0]), CallMoney()), money_of(r, 1)])
    return out


def _marks(groups: list[CallMoney]) -> str:
    """What is not exact in the sums, in words ('' when all is)."""
    m = total(groups)
    words = [f"{m.estimated} of {m.calls} calls estimated from their size (~)"] if m.estimated else []
    words += [f"{m.abandoned} abandoned calls metered"] if m.abandoned else []
    words += [f"{m.unpriced} calls of a model without a price: their cost is unknown, not $0"] if m.unpriced else []
    words += [f"context compacted {m.compactions} times"] if m.compactions else []
    return f" ({'; '.join(words)})" if words else ""


def turns_within(scenario: CostScenario, budget: float) -> int:
    """Turns passed before the scenario's running cost first exceeds `budget` (turn t counts when the cost
    of turns 0..t, all its attempts included, fits the budget)."""
    costs = dict(scenario.cost_by_turn)
    spent, passed = 0.0, 0
    for turn in range(scenario.turns_passed):
        spent += costs.get(turn, 0.0)
        if spent > budget + 1e-12:
            break
        passed += 1
    return passed
