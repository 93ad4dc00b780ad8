"""Read-only queries the web viewer makes: one sweep, scenario or attempt at a time, tolerant of old stores.

Plain sqlite3 over a `mode=ro` connection, like `queries`: the viewer never writes, so it can read a store
while a daemon writes it (WAL) and after the daemon is gone. A store written by an older staminad lacks the
columns and tables later migrations added; rows come back as dicts with those keys present and None, so a
page shows them empty instead of failing.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from protocol.errors import ExpectedError
from protocol.kinds import known_categories
from state.queries import decode_results
from state.schema import MIGRATIONS

LATEST = len(MIGRATIONS)

# Columns later migrations added, filled in as None when a store predates them.
_LATE_COLUMNS = {
    "attempts": ("finished_at", "loc", "server_log"),
    "sweeps": ("turns", "paused_seconds", "paused_at", "reason"),
    "scenarios": ("infra_grant",),
    "configurations": ("model",),
}


class StoreVersionError(ExpectedError):
    """The store was written by a newer staminad than this one."""


def schema_version(conn: sqlite3.Connection) -> int:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > LATEST:
        raise StoreVersionError(
            f"the store is at schema version {version}, newer than this staminad "
            f"({LATEST}): upgrade staminad to view it"
        )
    return version


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def _dicts(conn: sqlite3.Connection, table: str, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for row in conn.execute(sql, params):
        d = dict(zip(row.keys(), tuple(row), strict=True))
        for col in _LATE_COLUMNS.get(table, ()):
            d.setdefault(col, None)
        out.append(d)
    return out


def sweeps(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every sweep with its scenario counts by status and its number of attempts."""
    if not has_table(conn, "sweeps"):
        return []
    rows = _dicts(conn, "sweeps", "SELECT * FROM sweeps ORDER BY created_at")
    counts: dict[str, dict[str, int]] = {}
    for r in conn.execute(
        "SELECT c.sweep_id, s.status, COUNT(*) AS n FROM scenarios s "
        "JOIN configurations c ON c.id = s.config_id GROUP BY c.sweep_id, s.status"
    ):
        counts.setdefault(r["sweep_id"], {})[r["status"]] = int(r["n"])
    attempts = {
        r["sweep_id"]: int(r["n"])
        for r in conn.execute(
            "SELECT c.sweep_id, COUNT(*) AS n FROM attempts a JOIN scenarios s ON s.id = a.scenario_id "
            "JOIN configurations c ON c.id = s.config_id GROUP BY c.sweep_id"
        )
    }
    for r in rows:
        r["statuses"] = counts.get(r["id"], {})
        r["attempts"] = attempts.get(r["id"], 0)
    return rows


def sweep(conn: sqlite3.Connection, sweep_id: str) -> dict[str, Any] | None:
    rows = _dicts(conn, "sweeps", "SELECT * FROM sweeps WHERE id = ?", (sweep_id,))
    return rows[0] if rows else None


def configurations(conn: sqlite3.Connection, sweep_id: str) -> list[dict[str, Any]]:
    return _dicts(conn, "configurations", "SELECT * FROM configurations WHERE sweep_id = ? ORDER BY id", (sweep_id,))


def scenarios(conn: sqlite3.Connection, sweep_id: str) -> list[dict[str, Any]]:
    """Every scenario of the sweep with its configuration's name, in configuration then seed order."""
    return _dicts(
        conn,
        "scenarios",
        "SELECT s.*, c.name AS configuration FROM scenarios s "
        "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? ORDER BY c.id, s.seed",
        (sweep_id,),
    )


def scenario(conn: sqlite3.Connection, sweep_id: str, configuration: str, seed: int) -> dict[str, Any] | None:
    rows = _dicts(
        conn,
        "scenarios",
        "SELECT s.*, c.name AS configuration, c.retries, c.feedback, c.agent "
        "FROM scenarios s JOIN configurations c ON c.id = s.config_id "
        "WHERE c.sweep_id = ? AND c.name = ? AND s.seed = ?",
        (sweep_id, configuration, seed),
    )
    return rows[0] if rows else None


def progress(conn: sqlite3.Connection, sweep_id: str) -> list[dict[str, Any]]:
    """The attempt columns that say where each scenario stands, in scenario and attempt order (the categories as
    their words, as `state.store.Progress` has them)."""
    rows = _dicts(
        conn,
        "progress",
        "SELECT a.scenario_id, a.turn, a.attempt, a.infra_try, a.phase, a.outcome, "
        "a.infra_kind, a.categories FROM attempts a JOIN scenarios s ON s.id = a.scenario_id "
        "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? "
        "ORDER BY a.scenario_id, a.turn, a.attempt, a.infra_try",
        (sweep_id,),
    )
    for r in rows:
        r["categories"] = known_categories(r["categories"])
    return rows


def attempts(conn: sqlite3.Connection, scenario_id: int) -> list[dict[str, Any]]:
    """A scenario's attempts in order, each with its decoded per-test results under `tests`."""
    rows = _dicts(
        conn,
        "attempts",
        "SELECT * FROM attempts WHERE scenario_id = ? ORDER BY turn, attempt, infra_try",
        (scenario_id,),
    )
    for r in rows:
        r["tests"] = decode_results(r.pop("results", None))
    return rows


def infra_events(conn: sqlite3.Connection, scenario_id: int) -> list[dict[str, Any]]:
    return _dicts(
        conn, "infra_events", "SELECT * FROM infra_events WHERE scenario_id = ? ORDER BY at, id", (scenario_id,)
    )


def usage_by_attempt(conn: sqlite3.Connection, scenario_id: int) -> dict[int, dict[str, Any]]:
    """Tokens, cost and model calls per attempt id of the scenario (empty for a store without a gateway)."""
    if not has_table(conn, "llm_calls"):
        return {}
    sql = (
        "SELECT attempt_id, COUNT(*) AS calls, SUM(input_tokens) AS input_tokens, "
        "SUM(output_tokens) AS output_tokens, SUM(cached_tokens) AS cached_tokens, SUM(cost) AS cost "
        "FROM llm_calls WHERE scenario_id = ? AND attempt_id IS NOT NULL GROUP BY attempt_id"
    )
    return {int(r["attempt_id"]): dict(r) for r in conn.execute(sql, (scenario_id,))}


def usage_by_scenario(conn: sqlite3.Connection, sweep_id: str) -> dict[int, tuple[float, int]]:
    """(dollars, input + output tokens) per scenario id of the sweep."""
    if not has_table(conn, "llm_calls"):
        return {}
    sql = (
        "SELECT l.scenario_id, SUM(l.cost) AS cost, SUM(l.input_tokens + l.output_tokens) AS tokens "
        "FROM llm_calls l JOIN scenarios s ON s.id = l.scenario_id JOIN configurations c ON c.id = s.config_id "
        "WHERE c.sweep_id = ? GROUP BY l.scenario_id"
    )
    return {
        int(r["scenario_id"]): (float(r["cost"] or 0.0), int(r["tokens"] or 0)) for r in conn.execute(sql, (sweep_id,))
    }


def change_mark(conn: sqlite3.Connection) -> str:
    """A string that changes whenever anything the viewer shows may have changed (polled by open pages)."""
    if not has_table(conn, "attempts"):
        return "empty"
    a = conn.execute(
        "SELECT COUNT(*), MAX(id), TOTAL(COALESCE(harness_seconds, 0) + COALESCE(suite_seconds, 0)), "
        "SUM(phase = 'tested') FROM attempts"
    ).fetchone()
    s = conn.execute("SELECT COUNT(*), MAX(updated_at) FROM scenarios").fetchone()
    w = conn.execute("SELECT COUNT(*), GROUP_CONCAT(status) FROM sweeps").fetchone()
    return "/".join(str(x) for x in (*tuple(a), *tuple(s), *tuple(w)))
