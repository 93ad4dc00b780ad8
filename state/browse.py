"""Read-only queries the web viewer and the exports make: one sweep, scenario or attempt at a time, typed, tolerant of
old stores.

Plain sqlite3 over a `mode=ro` connection, like `queries`: the viewer never writes, so it can read a store
while a daemon writes it (WAL) and after the daemon is gone. Each row is decoded into a frozen Struct (closed sets
as `protocol.kinds` Literals), so a reader gets attributes mypy checks. A store written by an older staminad lacks
the columns later migrations added: their fields have defaults (None, 0, ''), so a page shows them empty instead
of failing. A stored value that does not fit its field (a hand-edited or damaged row) is a `state.rows.DamagedRow`:
one line naming the row and the value, never a crash in a reader.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from protocol.errors import ExpectedError
from protocol.kinds import (
    InfraKind,
    ScenarioStatus,
    SweepStatus,
    UnknownWord,
    known_scenario_status,
)
from state.money import CallMoney, flag_columns, money_columns, money_of
from state.queries import decode_results
from state.rows import DamagedRow, decode_row
from state.schema import MIGRATIONS
from state.store import AttemptRow, Progress

LATEST = len(MIGRATIONS)
S = TypeVar("S", bound=msgspec.Struct)


class StoreVersionError(ExpectedError):
    """The store was written by a newer staminad than this one."""


class SweepRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A sweep's row (`config` is the sweep file as JSON)."""

    id: str
    name: str
    fingerprint: str
    config: str
    status: SweepStatus
    created_at: float
    turns: int | None = None  # the horizon N; None for a store from before it was recorded, or not yet known
    paused_seconds: float = 0.0
    paused_at: float | None = None
    reason: str = ""
    planned: int | None = None  # scenarios per configuration it lays out (None: from before it was recorded)


class SweepCounts(msgspec.Struct, frozen=True, kw_only=True):
    """A sweep with its scenario counts by status and its number of attempts (the sweeps page's line)."""

    sweep: SweepRecord
    statuses: dict[ScenarioStatus, int]
    attempts: int


class ConfigurationRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A configuration's row: what it runs (agent, model) with which R and feedback."""

    id: int
    sweep_id: str
    name: str
    agent: str
    retries: int
    feedback: str
    model: str = ""  # '' for a store from before models were an axis


class ScenarioRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A scenario's row with its configuration's name; `sandbox` is the stored JSON text, as written."""

    id: int
    config_id: int
    configuration: str
    seed: int
    status: ScenarioStatus
    turns_passed: int
    reason: str
    sandbox: str
    updated_at: float
    infra_grant: int = 0


class ScenarioDetail(ScenarioRecord, frozen=True, kw_only=True):
    """A scenario's row with what its configuration runs, for the scenario's own page."""

    agent: str
    retries: int
    feedback: str


class AttemptRecord(AttemptRow, frozen=True, kw_only=True):
    """An attempt's row as the store keeps it (`AttemptRow`), with what only the viewer reads, and its per-test
    results decoded (`tests`; empty when the suite never ran)."""

    server_log: str | None = None
    snapshot_bytes: int | None = None
    snapshot_skipped: str | None = None
    tests: list[dict[str, Any]] = msgspec.field(default_factory=list)


class InfraEventRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An infrastructure failure recorded for a scenario, at an attempt."""

    id: int
    scenario_id: int
    turn: int
    attempt: int
    kind: InfraKind
    detail: str
    at: float


class AttemptUsage(msgspec.Struct, frozen=True, kw_only=True):
    """The model calls an attempt made through the gateway: how many, their tokens and dollars."""

    calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost: float
    estimated: int = 0  # calls whose tokens were counted from bytes (no usage reported, or abandoned)
    unpriced: int = 0  # calls of a model without a price: their cost is unknown, not 0
    abandoned: int = 0  # calls the endpoint got that nobody saw through
    compactions: int = 0  # calls the harness made to compact its context

    @property
    def money(self) -> CallMoney:
        tokens = self.input_tokens + self.output_tokens
        flags = (self.estimated, self.unpriced, self.abandoned, self.compactions)
        return CallMoney(cost=self.cost, tokens=tokens, calls=self.calls, **dict(zip(MONEY_FLAGS, flags, strict=True)))


MONEY_FLAGS = ("estimated", "unpriced", "abandoned", "compactions")


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


def _rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return [dict(zip(row.keys(), tuple(row), strict=True)) for row in conn.execute(sql, params)]


def _sweep(row: Mapping[str, Any]) -> SweepRecord:
    return decode_row(SweepRecord, row, f"sweep {row.get('id')!r}")


def _scenario(cls: type[S], row: Mapping[str, Any]) -> S:
    what = f"scenario {row.get('id')} (seed {row.get('seed')} of configuration {row.get('configuration')!r})"
    return decode_row(cls, row, what)


def sweeps(conn: sqlite3.Connection) -> list[SweepCounts]:
    """Every sweep with its scenario counts by status and its number of attempts."""
    if not has_table(conn, "sweeps"):
        return []
    rows = _rows(conn, "SELECT * FROM sweeps ORDER BY created_at")
    counts: dict[str, dict[ScenarioStatus, int]] = {}
    for r in conn.execute(
        "SELECT c.sweep_id, s.status, COUNT(*) AS n FROM scenarios s "
        "JOIN configurations c ON c.id = s.config_id GROUP BY c.sweep_id, s.status"
    ):
        try:
            status = known_scenario_status(r["status"])
        except UnknownWord as unknown:
            raise DamagedRow(f"a scenario of sweep {r['sweep_id']!r} in the store cannot be read: {unknown}") from None
        counts.setdefault(r["sweep_id"], {})[status] = int(r["n"])
    attempts = {
        r["sweep_id"]: int(r["n"])
        for r in conn.execute(
            "SELECT c.sweep_id, COUNT(*) AS n FROM attempts a JOIN scenarios s ON s.id = a.scenario_id "
            "JOIN configurations c ON c.id = s.config_id GROUP BY c.sweep_id"
        )
    }
    return [
        SweepCounts(sweep=_sweep(r), statuses=counts.get(r["id"], {}), attempts=attempts.get(r["id"], 0)) for r in rows
    ]


def sweep(conn: sqlite3.Connection, sweep_id: str) -> SweepRecord | None:
    rows = _rows(conn, "SELECT * FROM sweeps WHERE id = ?", (sweep_id,))
    return _sweep(rows[0]) if rows else None


def configurations(conn: sqlite3.Connection, sweep_id: str) -> list[ConfigurationRecord]:
    return [
        decode_row(ConfigurationRecord, r, f"configuration {r.get('name')!r} of sweep {sweep_id!r}")
        for r in _rows(conn, "SELECT * FROM configurations WHERE sweep_id = ? ORDER BY id", (sweep_id,))
    ]


def scenarios(conn: sqlite3.Connection, sweep_id: str) -> list[ScenarioRecord]:
    """Every scenario of the sweep with its configuration's name, in configuration then seed order."""
    sql = (
        "SELECT s.*, c.name AS configuration FROM scenarios s "
        "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? ORDER BY c.id, s.seed"
    )
    return [_scenario(ScenarioRecord, r) for r in _rows(conn, sql, (sweep_id,))]


def scenario(conn: sqlite3.Connection, sweep_id: str, configuration: str, seed: int) -> ScenarioDetail | None:
    rows = _rows(
        conn,
        "SELECT s.*, c.name AS configuration, c.retries, c.feedback, c.agent "
        "FROM scenarios s JOIN configurations c ON c.id = s.config_id "
        "WHERE c.sweep_id = ? AND c.name = ? AND s.seed = ?",
        (sweep_id, configuration, seed),
    )
    return _scenario(ScenarioDetail, rows[0]) if rows else None


def progress(conn: sqlite3.Connection, sweep_id: str) -> list[Progress]:
    """The attempt columns that say where each scenario stands, in scenario and attempt order."""
    sql = (
        "SELECT a.id, a.scenario_id, a.turn, a.attempt, a.infra_try, a.phase, a.outcome, "
        "a.infra_kind, a.categories FROM attempts a JOIN scenarios s ON s.id = a.scenario_id "
        "JOIN configurations c ON c.id = s.config_id WHERE c.sweep_id = ? "
        "ORDER BY a.scenario_id, a.turn, a.attempt, a.infra_try"
    )
    return [decode_row(Progress, r, f"attempt {r['id']}") for r in _rows(conn, sql, (sweep_id,))]


def attempts(conn: sqlite3.Connection, scenario_id: int) -> list[AttemptRecord]:
    """A scenario's attempts in order, each with its decoded per-test results under `tests`."""
    out = []
    for r in _rows(
        conn, "SELECT * FROM attempts WHERE scenario_id = ? ORDER BY turn, attempt, infra_try", (scenario_id,)
    ):
        r["tests"] = decode_results(r.pop("results", None))
        out.append(decode_row(AttemptRecord, r, f"attempt {r['id']}"))
    return out


def infra_events(conn: sqlite3.Connection, scenario_id: int) -> list[InfraEventRecord]:
    sql = "SELECT * FROM infra_events WHERE scenario_id = ? ORDER BY at, id"
    return [decode_row(InfraEventRecord, r, f"infra event {r['id']}") for r in _rows(conn, sql, (scenario_id,))]


def usage_by_attempt(conn: sqlite3.Connection, scenario_id: int) -> dict[int, AttemptUsage]:
    """Tokens, cost and model calls per attempt id of the scenario (empty for a store without a gateway)."""
    if not has_table(conn, "llm_calls"):
        return {}
    flags = flag_columns(conn)  # estimated, unpriced, abandoned, compaction: 0 where not recorded
    sql = (
        "SELECT attempt_id, COUNT(*) AS calls, SUM(input_tokens) AS input_tokens, "
        "SUM(output_tokens) AS output_tokens, SUM(cached_tokens) AS cached_tokens, SUM(cost) AS cost, "
        + ", ".join(f"{flag} AS {name}" for flag, name in zip(flags, MONEY_FLAGS, strict=True))
        + " FROM llm_calls l WHERE scenario_id = ? AND attempt_id IS NOT NULL GROUP BY attempt_id"
    )
    return {
        int(r["attempt_id"]): decode_row(AttemptUsage, r, f"the model calls of attempt {r['attempt_id']}")
        for r in _rows(conn, sql, (scenario_id,))
    }


def usage_by_scenario(conn: sqlite3.Connection, sweep_id: str) -> dict[int, CallMoney]:
    """The model calls of each scenario id of the sweep (`state.money`)."""
    if not has_table(conn, "llm_calls"):
        return {}
    sql = (
        f"SELECT l.scenario_id, {money_columns(conn)} "
        "FROM llm_calls l JOIN scenarios s ON s.id = l.scenario_id JOIN configurations c ON c.id = s.config_id "
        "WHERE c.sweep_id = ? GROUP BY l.scenario_id"
    )
    return {int(r[0]): money_of(r, 1) for r in conn.execute(sql, (sweep_id,))}


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
