"""The cost study (paper: cost vs stamina): dollars per scenario and turns passed within a cost budget.

Read from the model calls the LLM gateway recorded (`llm_calls`); a store without them has no cost study,
and says so instead of drawing zeros.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from staminad.analysis.stats import mean_se
from state import browse, queries

NO_USAGE = "no token or cost data recorded for these sweeps (needs the LLM gateway)"


def study(db: Path, sweeps: list[str] | None = None, points: int = 25) -> dict[str, Any]:
    """{"cost_study": per configuration: scenarios with cost and turns, the budget curve} or a reason."""
    conn = queries.connect_readonly(db)
    try:
        return _study(conn, sweeps or queries.sweep_ids(conn), points)
    finally:
        conn.close()


def _study(conn: sqlite3.Connection, sweeps: list[str], points: int) -> dict[str, Any]:
    if not browse.has_table(conn, "llm_calls"):
        return {"cost_study": None, "cost": NO_USAGE}
    configs: dict[str, dict[str, Any]] = {}
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
            entry = configs.setdefault(s["configuration"], {"scenarios": []})
            turns = per_turn.get(s["id"], {})
            entry["scenarios"].append(
                {
                    "seed": s["seed"],
                    "turns_passed": s["turns_passed"],
                    "status": s["status"],
                    "cost": sum(turns.values()),
                    "cost_by_turn": sorted(turns.items()),
                }
            )
    total = sum(x["cost"] for c in configs.values() for x in c["scenarios"])
    if total <= 0:
        return {"cost_study": None, "cost": NO_USAGE}
    top = max(x["cost"] for c in configs.values() for x in c["scenarios"])
    budgets = [top * i / (points - 1) for i in range(points)]
    for entry in configs.values():
        entry["budget_curve"] = [
            (b, *mean_se([float(turns_within(x, b)) for x in entry["scenarios"]])) for b in budgets
        ]
    spent = ", ".join(f"{name} ${sum(x['cost'] for x in c['scenarios']):.2f}" for name, c in configs.items())
    return {"cost_study": configs, "cost": f"spent through the gateway: {spent}"}


def turns_within(scenario: dict[str, Any], budget: float) -> int:
    """Turns passed before the scenario's running cost first exceeds `budget` (turn t counts when the cost
    of turns 0..t, all its attempts included, fits the budget)."""
    costs = dict(scenario["cost_by_turn"])
    spent, passed = 0.0, 0
    for turn in range(scenario["turns_passed"]):
        spent += costs.get(turn, 0.0)
        if spent > budget + 1e-12:
            break
        passed += 1
    return passed
