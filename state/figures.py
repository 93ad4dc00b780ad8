"""The reads a sweep's figures (`status`) need, synchronous, for `Store.read`: every query runs in one worker
thread on its own connection, and each returns one row per scenario or per configuration, never per attempt,
so what `status` costs does not grow with the attempts a sweep has run."""

from __future__ import annotations

import sqlite3

import msgspec

from state.money import CallMoney, money_columns, money_of


class ScenarioFigures(msgspec.Struct, frozen=True):
    """What the figures read of one scenario: its configuration, row, status and turns passed; its last
    attempt's infra kind (in turn, attempt and infra try order; None with no attempt) and whether the suite
    tested any of its attempts (pass or fail)."""

    configuration: str
    id: int
    status: str
    turns_passed: int
    end_kind: str | None
    tested: bool
    started: bool = False  # it has an attempt


class SweepFigures(msgspec.Struct, frozen=True):
    scenarios: list[ScenarioFigures]  # in configuration and seed order
    infra: dict[tuple[str, str], int]  # infra events per (configuration, kind)
    usage: dict[str, CallMoney]  # the model calls of each configuration
    models: dict[str, str]  # each configuration's model ('' for none), every configuration in order
    planned: int | None = None  # scenarios per configuration the sweep lays out (None: not recorded)


def sweep_figures(conn: sqlite3.Connection, sweep_id: str) -> SweepFigures:
    scenarios = conn.execute(
        "SELECT c.name, s.id, s.status, s.turns_passed, (SELECT a.infra_kind FROM attempts a "
        "WHERE a.scenario_id = s.id ORDER BY a.turn DESC, a.attempt DESC, a.infra_try DESC LIMIT 1), "
        "EXISTS (SELECT 1 FROM attempts a WHERE a.scenario_id = s.id AND a.outcome IN ('pass', 'fail')), "
        "EXISTS (SELECT 1 FROM attempts a WHERE a.scenario_id = s.id) "
        "FROM scenarios s JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? ORDER BY c.id, s.seed",
        (sweep_id,),
    ).fetchall()
    infra = conn.execute(
        "SELECT c.name, e.kind, COUNT(*) FROM infra_events e JOIN scenarios s ON s.id = e.scenario_id "
        "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? GROUP BY c.name, e.kind",
        (sweep_id,),
    ).fetchall()
    usage = conn.execute(
        f"SELECT c.name, {money_columns(conn)} FROM llm_calls l "
        "JOIN scenarios s ON s.id = l.scenario_id JOIN configurations c ON c.id = s.config_id "
        "WHERE c.sweep_id = ? GROUP BY c.name",
        (sweep_id,),
    ).fetchall()
    models = conn.execute(
        "SELECT name, model FROM configurations WHERE sweep_id = ? ORDER BY id", (sweep_id,)
    ).fetchall()
    planned = conn.execute("SELECT planned FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    return SweepFigures(
        scenarios=[
            ScenarioFigures(str(r[0]), int(r[1]), str(r[2]), int(r[3]), r[4], bool(r[5]), bool(r[6])) for r in scenarios
        ],
        infra={(str(r[0]), str(r[1])): int(r[2]) for r in infra},
        usage={str(r[0]): money_of(r, 1) for r in usage},
        models={str(r[0]): str(r[1]) for r in models},
        planned=int(planned[0]) if planned and planned[0] is not None else None,
    )
